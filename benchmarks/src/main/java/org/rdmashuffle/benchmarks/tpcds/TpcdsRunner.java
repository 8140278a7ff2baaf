package org.rdmashuffle.benchmarks.tpcds;

import java.awt.Color;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

import io.trino.tpcds.Table;
import org.rdmashuffle.benchmarks.spark.LocalCluster;

/**
 * TPC-DS with Spark's built-in shuffle and with rdma-shuffle, side by side: two Spark applications
 * (each local-cluster, separate executor JVMs) stay up, and every query runs on one and then the
 * other (the order swapped from query to query). Each result is compared row for row (sorted) with
 * the built-in one; a difference is re-checked by running the query on the built-in shuffle again,
 * which tells a query that is not deterministic (e.g. LIMIT over ties) from a wrong answer. The
 * first query runs once on each, unrecorded, before the measured runs.
 *
 * <pre>
 *   TpcdsRunner [--scale 0.1] [--queries all|q3,q7,...] [--data DIR] [--out DIR]
 * </pre>
 * Writes {@code results.csv}, {@code results.md} and three PNG charts to the output directory.
 */
public final class TpcdsRunner {
    /** One query, both ways. */
    public record Outcome(String query, long builtinMs, long rdmaMs, long shuffleReadBytes, long shuffleWriteBytes,
                          long rows, String verdict) {
        double ratio() {
            return builtinMs == 0 ? Double.NaN : (double) rdmaMs / builtinMs;
        }
    }

    /** A QueryServer JVM. */
    private static final class Server implements AutoCloseable {
        final String shuffle;
        final Process process;
        final BufferedReader out;
        final PrintWriter in;

        Server(String shuffle, Path log) throws IOException {
            this.shuffle = shuffle;
            List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Xmx1g"));
            cmd.addAll(java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                    .filter(a -> a.startsWith("--add-opens") || a.startsWith("--enable-native-access")
                            || a.startsWith("--sun-misc") || a.startsWith("-XX:+IgnoreUnrecognized") || a.startsWith("-Djdk.reflect")
                            || a.startsWith("-Dio.netty") || a.startsWith("-D" + LocalCluster.EXECUTOR_OPTIONS)
                            || a.startsWith("-D" + LocalCluster.MASTER))
                    .toList());
            cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), QueryServer.class.getName(), shuffle));
            process = new ProcessBuilder(cmd).redirectError(log.toFile()).start();
            out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            in = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
            String ready = reply();
            if (!ready.equals("READY")) {
                throw new IOException(shuffle + " query server: " + ready + " (log: " + log + ")");
            }
        }

        /** The next protocol line without its {@code @@ } prefix. */
        String reply() throws IOException {
            String line;
            while ((line = out.readLine()) != null) {
                if (line.startsWith("@@ ")) {
                    return line.substring(3);
                }
            }
            throw new IOException(shuffle + " query server exited (" + (process.isAlive() ? "still running" : "exit " + process.exitValue()) + ")");
        }

        String call(String command) throws IOException {
            in.println(command);
            return reply();
        }

        @Override
        public void close() {
            in.println("quit");
            in.close();
            try {
                if (!process.waitFor(60, java.util.concurrent.TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        double scale = 0.1;
        String queries = "all";
        Path data = null;
        Path out = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--scale" -> scale = Double.parseDouble(args[++i]);
                case "--queries" -> queries = args[++i];
                case "--data" -> data = Path.of(args[++i]);
                case "--out" -> out = Path.of(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i]
                        + " (usage: TpcdsRunner [--scale S] [--queries all|q3,q7] [--data DIR] [--out DIR])");
            }
        }
        String sf = String.format(Locale.ROOT, "sf%s", scale).replace(".0", "").replace('.', '_');
        if (data == null) {
            data = Path.of("benchmarks", "data", "tpcds-" + sf);
        }
        if (out == null) {
            out = Path.of("benchmarks", "results", "tpcds-" + sf);
        }
        List<Outcome> outcomes = run(scale, queries, data, out);
        long bad = outcomes.stream().filter(o -> o.verdict().startsWith("MISMATCH") || o.verdict().startsWith("FAIL rdma")
                || o.verdict().startsWith("FAIL built-in")).count();
        System.exit(bad == 0 ? 0 : 1);
    }

    /** Runs the queries both ways and writes the results; returns one outcome per query. */
    public static List<Outcome> run(double scale, String queryNames, Path data, Path out) throws Exception {
        Map<String, String> queries = TpcdsQueries.select(queryNames);
        List<Table> tables = TpcdsQueries.tablesUsed(queries);
        Files.createDirectories(data);
        Files.createDirectories(out);
        Path scratch = Files.createTempDirectory("tpcds-results");
        List<Outcome> outcomes = new ArrayList<>();
        System.out.printf("TPC-DS scale %s: %d queries over %d tables; data %s; both Spark applications starting%n", scale,
                queries.size(), tables.size(), data.toAbsolutePath());
        try (Server builtin = new Server("builtin", out.resolve("builtin.log"));
             Server rdma = new Server("rdma", out.resolve("rdma.log"))) {
            long t0 = System.nanoTime();
            expect(builtin.call("generate " + scale + " " + data.toAbsolutePath() + " "
                    + tables.stream().map(Table::getName).collect(Collectors.joining(","))), "DONE generate");
            System.out.printf("data ready in %d s%n", (System.nanoTime() - t0) / 1_000_000_000);
            expect(builtin.call("register " + data.toAbsolutePath()), "DONE register");
            expect(rdma.call("register " + data.toAbsolutePath()), "DONE register");
            // One unrecorded query each first: JIT, connections and the engines' start are not the queries' cost.
            String first = queries.keySet().iterator().next();
            expect(builtin.call("run " + first + " " + scratch.resolve("warm-up.builtin")), "DONE run");
            expect(rdma.call("run " + first + " " + scratch.resolve("warm-up.rdma")), "DONE run");
            int i = 0;
            for (String q : queries.keySet()) {
                i++;
                Path bFile = scratch.resolve(q + ".builtin");
                Path rFile = scratch.resolve(q + ".rdma");
                String b;
                String r;
                if (i % 2 == 1) {
                    b = builtin.call("run " + q + " " + bFile);
                    r = rdma.call("run " + q + " " + rFile);
                } else {
                    r = rdma.call("run " + q + " " + rFile);
                    b = builtin.call("run " + q + " " + bFile);
                }
                Outcome o = outcome(q, b, r, bFile, rFile, builtin, scratch);
                outcomes.add(o);
                System.out.printf("[%3d/%d] %-5s built-in %6d ms, rdma %6d ms (%.2f), shuffle %8.1f MB, %5d rows: %s%n", i,
                        queries.size(), q, o.builtinMs(), o.rdmaMs(), o.ratio(), o.shuffleReadBytes() / 1e6, o.rows(), o.verdict());
            }
        }
        write(outcomes, scale, out);
        return outcomes;
    }

    private static void expect(String reply, String prefix) {
        if (!reply.startsWith(prefix)) {
            throw new IllegalStateException("expected " + prefix + ", got " + reply);
        }
    }

    private static Outcome outcome(String q, String b, String r, Path bFile, Path rFile, Server builtin, Path scratch)
            throws IOException {
        if (!b.startsWith("DONE") || !r.startsWith("DONE")) {
            String verdict = !b.startsWith("DONE") && !r.startsWith("DONE") ? "FAIL both: " + b
                    : !r.startsWith("DONE") ? "FAIL rdma: " + r : "FAIL built-in: " + b;
            return new Outcome(q, field(b, 2), field(r, 2), field(b, 3), field(b, 4), field(b, 5), verdict);
        }
        String verdict;
        if (Files.readAllLines(bFile).equals(Files.readAllLines(rFile))) {
            verdict = "match";
        } else {
            Path again = scratch.resolve(q + ".builtin-again");
            String b2 = builtin.call("run " + q + " " + again);
            boolean stable = b2.startsWith("DONE") && Files.readAllLines(again).equals(Files.readAllLines(bFile));
            verdict = stable ? "MISMATCH (built-in is stable, rdma differs)" : "nondeterministic (built-in differs from itself)";
        }
        return new Outcome(q, field(b, 2), field(r, 2), field(b, 3), field(b, 4), field(b, 5), verdict);
    }

    /** Field {@code i} of "DONE run ms read write rows", 0 when absent. */
    private static long field(String reply, int i) {
        String[] f = reply.split(" ");
        return f.length > i && f[0].equals("DONE") ? Long.parseLong(f[i]) : 0;
    }

    private static void write(List<Outcome> outcomes, double scale, Path out) throws IOException {
        StringBuilder csv = new StringBuilder("query,builtin_ms,rdma_ms,ratio,shuffle_read_bytes,shuffle_write_bytes,rows,verdict\n");
        StringBuilder md = new StringBuilder("| query | built-in ms | rdma-shuffle ms | ratio | shuffle read MB | rows | result |\n"
                + "|---|---|---|---|---|---|---|\n");
        long bTotal = 0;
        long rTotal = 0;
        for (Outcome o : outcomes) {
            csv.append(String.join(",", o.query(), Long.toString(o.builtinMs()), Long.toString(o.rdmaMs()),
                    String.format(Locale.ROOT, "%.3f", o.ratio()), Long.toString(o.shuffleReadBytes()),
                    Long.toString(o.shuffleWriteBytes()), Long.toString(o.rows()), '"' + o.verdict() + '"')).append('\n');
            md.append(String.format(Locale.ROOT, "| %s | %d | %d | %.2f | %.1f | %d | %s |%n", o.query(), o.builtinMs(), o.rdmaMs(),
                    o.ratio(), o.shuffleReadBytes() / 1e6, o.rows(), o.verdict()));
            if (o.verdict().equals("match") || o.verdict().startsWith("nondeterministic")) {
                bTotal += o.builtinMs();
                rTotal += o.rdmaMs();
            }
        }
        long matched = outcomes.stream().filter(o -> o.verdict().equals("match")).count();
        long nondet = outcomes.stream().filter(o -> o.verdict().startsWith("nondeterministic")).count();
        long bothFailed = outcomes.stream().filter(o -> o.verdict().startsWith("FAIL both")).count();
        String summary = String.format(Locale.ROOT, "TPC-DS scale %s, %d queries: %d identical, %d not deterministic on the "
                + "built-in shuffle itself, %d failing on both shuffles alike, %d different or failing on one. Total time over "
                + "the comparable ones: built-in %.1f s, rdma-shuffle %.1f s, ratio %.3f.%n", scale, outcomes.size(), matched,
                nondet, bothFailed, outcomes.size() - matched - nondet - bothFailed, bTotal / 1e3, rTotal / 1e3,
                bTotal == 0 ? Double.NaN : (double) rTotal / bTotal);
        Files.writeString(out.resolve("results.csv"), csv);
        Files.writeString(out.resolve("results.md"), summary + "\n" + md);
        List<String> labels = outcomes.stream().map(Outcome::query).toList();
        Charts.bars(out.resolve("time-ratio.png"), "TPC-DS sf " + scale + ": query time, rdma-shuffle / built-in (below 1: faster)",
                "ratio", labels, outcomes.stream().mapToDouble(o -> Double.isNaN(o.ratio()) ? 0 : o.ratio()).toArray(), 1.0,
                new Color(60, 110, 180));
        Charts.bars(out.resolve("total-time.png"), "TPC-DS sf " + scale + ": total query time (s)", "seconds",
                List.of("built-in", "rdma-shuffle"), new double[] {bTotal / 1e3, rTotal / 1e3}, Double.NaN, new Color(90, 150, 90));
        Charts.bars(out.resolve("shuffle-bytes.png"), "TPC-DS sf " + scale + ": shuffle bytes read per query (MB)", "MB", labels,
                outcomes.stream().mapToDouble(o -> o.shuffleReadBytes() / 1e6).toArray(), Double.NaN, new Color(200, 120, 50));
        System.out.print(summary);
        System.out.println("written: " + out.resolve("results.md") + ", results.csv, time-ratio.png, total-time.png, shuffle-bytes.png");
    }
}
