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
import org.rdmashuffle.benchmarks.CommandLine;
import org.rdmashuffle.benchmarks.cluster.ClusterRun;
import org.rdmashuffle.benchmarks.spark.BalancedPairs;
import org.rdmashuffle.benchmarks.spark.LocalCluster;
import org.rdmashuffle.benchmarks.spark.StageAccounting;

/**
 * TPC-DS with Spark's built-in shuffle and with rdma-shuffle, side by side: two Spark applications
 * stay up, and every query runs on one and then the other, compared in balanced pairs ({@link BalancedPairs}).
 * Each result is compared row for row (sorted) with the built-in one; a difference is re-checked by
 * running the query on the built-in shuffle again, which tells a query that is not deterministic
 * (e.g. LIMIT over ties) from a wrong answer; two empty results are "empty", not "match". Per query
 * it records both row counts, and on each side the remote bytes and how many came over RDMA, so a
 * run where RDMA silently fell back shows. The first query runs once on each, unrecorded, first.
 *
 * <pre>
 *   TpcdsRunner [--scale 0.1] [--queries all|q3,q7,...] [--pairs N] [--shuffle-partitions N] [--control] [--rdma-first]
 *               [--data DIR] [--out DIR]
 *               [--hosts N [--rate RATE] [--profile]]
 * </pre>
 * {@code --pairs N} (default 1) runs 2N rounds, every query once on each side per round (the two
 * applications stay up). Rounds 2p-1 and 2p are pair p: each query runs in them in opposite orders
 * (built-in then rdma-shuffle in one, rdma-shuffle then built-in in the other), and which order a
 * pair starts with alternates from query to query and from pair to pair ({@link #order}), so whatever
 * the second place of a query costs falls on both sides alike. Each round is written to {@code
 * round-<r>/}; {@link RoundSummary} writes every round's times beside the pairs' ratios, their median
 * with a 90% interval, and the order effect ({@code rounds.md}, {@code rounds.csv}). {@code
 * --shuffle-partitions N} sets {@code spark.sql.shuffle.partitions} on both sides (the output
 * directory gains {@code -p<N>}). {@code --control} is the control experiment: the second application
 * runs Spark's built-in shuffle too (its figures stand in the rdma-shuffle columns), so what the
 * bed itself does to two applications side by side shows apart from what the plugin does (the
 * output directory gains {@code -control}). {@code --rdma-first} starts the rdma-shuffle application
 * before the built-in one (which application started first is the one thing a run does not alternate).
 * Without {@code --hosts} both applications are local-cluster (two executor JVMs each, 127.0.0.1).
 * With it, both run on Spark's standalone cluster across N Worker hosts of the cluster bed
 * ({@link ClusterRun}), each with one 1-core executor per Worker. Writes {@code results.csv},
 * {@code results.md} and three PNG charts to the output directory.
 */
public final class TpcdsRunner {
    /** One query, both ways; the byte counts are the shuffle's remote bytes and the part of them RDMA carried. */
    public record Outcome(String query, long builtinMs, long rdmaMs, long shuffleReadBytes, long shuffleWriteBytes,
                          long builtinRows, long rdmaRows, Carried builtin, Carried rdma, String verdict,
                          List<StageAccounting.Stage> builtinStages, List<StageAccounting.Stage> rdmaStages) {
        double ratio() {
            return builtinMs == 0 ? Double.NaN : (double) rdmaMs / builtinMs;
        }

        /** Whether the two results can be compared as answers (identical, both empty, or not deterministic). */
        boolean comparable() {
            return verdict.equals("match") || verdict.equals("empty") || verdict.startsWith("nondeterministic");
        }
    }

    /**
     * What crossed between executors for one query on one side: Spark's count of remote bytes (what the
     * tasks consumed), and what the plugin's executors fetched over RDMA and had Spark's transport fetch.
     */
    public record Carried(boolean plugin, long remoteBytes, long rdmaBytes, long fallbackBlocks, long fallbackBytes) {
        static Carried of(String reply, boolean plugin) {
            return new Carried(plugin, field(reply, 6), field(reply, 7), field(reply, 8), field(reply, 9));
        }

        /** Bytes over Spark's own transport: on the built-in side every remote byte, on the plugin's its fallbacks. */
        long builtinBytes() {
            return plugin ? fallbackBytes : remoteBytes;
        }
    }

    /** A QueryServer JVM. */
    private static final class Server implements AutoCloseable {
        final String shuffle;
        final Process process;
        final BufferedReader out;
        final PrintWriter in;

        Server(String shuffle, Process process, String log) throws IOException {
            this.shuffle = shuffle;
            this.process = process;
            out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            in = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
            String ready = reply();
            if (!ready.equals("READY")) {
                throw new IOException(shuffle + " query server: " + ready + " (log: " + log + ")");
            }
        }

        /** A local-cluster application: a QueryServer JVM started from this one's classpath and options. */
        static Server local(String shuffle, Path log) throws IOException {
            List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Xmx1g"));
            cmd.addAll(java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                    .filter(a -> a.startsWith("--add-opens") || a.startsWith("--enable-native-access")
                            || a.startsWith("--sun-misc") || a.startsWith("-XX:+IgnoreUnrecognized") || a.startsWith("-Djdk.reflect")
                            || a.startsWith("-Dio.netty") || a.startsWith("-D" + LocalCluster.EXECUTOR_OPTIONS)
                            || a.startsWith("-D" + LocalCluster.MASTER))
                    .toList());
            cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), QueryServer.class.getName(), shuffle));
            return new Server(shuffle, new ProcessBuilder(cmd).redirectError(log.toFile()).start(), log.toString());
        }

        /**
         * An application on the cluster bed's standalone cluster: one 1-core executor of 1 GiB per
         * Worker (spark.cores.max caps it, so the other application gets the Workers' other core).
         */
        static Server onCluster(String shuffle, ClusterRun cluster, int workers, List<String> extraConfs) throws IOException,
                InterruptedException {
            String log = "queryserver-" + shuffle + ".log";
            List<String> confs = new ArrayList<>(List.of("spark.executor.cores=1", "spark.cores.max=" + workers,
                    "spark.executor.memory=1g"));
            confs.addAll(extraConfs);
            Process p = cluster.submit(QueryServer.class.getName(), confs, List.of(shuffle, Integer.toString(workers)), log);
            return new Server(shuffle, p, cluster.logs().resolve(log).toString());
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

    /** Its command line. */
    record Options(double scale, String queries, Path data, Path out, int hosts, String rate, boolean profile, int pairs,
                   int partitions, boolean control, boolean rdmaFirst, boolean cpuByThread) {
        static final String USAGE = "TpcdsRunner [--scale S] [--queries all|q3,q7] [--pairs N] [--shuffle-partitions N] [--control] "
                + "[--rdma-first] [--data DIR] [--out DIR] [--hosts N [--rate R] [--profile] [--cpu-by-thread]]";
        /** The most Worker hosts: the bed makes at most 200, and the Master and the driver take two. */
        static final int MAX_HOSTS = 198;

        /** Parses and checks the command line, the query names too; a bad argument is an IllegalArgumentException naming it. */
        static Options parse(String... args) {
            double scale = 0.1;
            String queries = "all";
            Path data = null;
            Path out = null;
            int hosts = 0;
            String rate = null;
            boolean profile = false;
            int pairs = 1;
            int partitions = 0;
            boolean control = false;
            boolean rdmaFirst = false;
            boolean cpuByThread = false;
            for (int i = 0; i < args.length; i++) {
                String option = args[i];
                switch (option) {
                    case "--hosts" -> hosts = CommandLine.wholeNumber(option, CommandLine.value(args, ++i, option), 1, MAX_HOSTS);
                    case "--rate" -> rate = CommandLine.rate(option, CommandLine.value(args, ++i, option));
                    case "--profile" -> profile = true;
                    case "--cpu-by-thread" -> cpuByThread = true;
                    case "--control" -> control = true;
                    case "--rdma-first" -> rdmaFirst = true;
                    case "--pairs" -> pairs = positive(option, args, ++i);
                    case "--rounds" -> throw new IllegalArgumentException(ROUNDS_BECAME_PAIRS
                            + (i + 1 < args.length ? " " + args[i + 1] : ""));
                    case "--shuffle-partitions" -> partitions = positive(option, args, ++i);
                    case "--scale" -> scale = CommandLine.positiveNumber(option, CommandLine.value(args, ++i, option));
                    case "--queries" -> queries = CommandLine.value(args, ++i, option);
                    case "--data" -> data = Path.of(CommandLine.value(args, ++i, option));
                    case "--out" -> out = Path.of(CommandLine.value(args, ++i, option));
                    default -> throw new IllegalArgumentException("unknown argument " + option + " (usage: " + USAGE + ")");
                }
            }
            if (hosts == 0 && (rate != null || profile || cpuByThread)) {
                throw new IllegalArgumentException((rate != null ? "--rate" : profile ? "--profile" : "--cpu-by-thread")
                        + " needs --hosts N (the cluster bed)");
            }
            try {
                TpcdsQueries.select(queries);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("--queries: " + e.getMessage());
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            return new Options(scale, queries, data, out, hosts, rate, profile, pairs, partitions, control, rdmaFirst, cpuByThread);
        }

        /** What {@code --rounds K} (every query K times per side, one order per query and round) is told. */
        static final String ROUNDS_BECAME_PAIRS = "--rounds became --pairs N (N balanced pairs: 2N rounds, each query in both "
                + "orders in every pair): give --pairs instead of --rounds";
    }

    /** The two applications, as {@link BalancedPairs} and {@link RoundSummary} name them: the baseline first. */
    static final List<String> SYSTEMS = List.of("builtin", "rdma");

    /**
     * The order in which round {@code round} (0-based; rounds 2p and 2p+1 are pair p) runs query number
     * {@code query} (0-based, in the order the queries run): the pair's two rounds in opposite orders,
     * and the order a pair starts with rotated by query and by pair, so within a round the queries
     * alternate which side goes first and over the run both start pairs equally often.
     */
    static List<String> order(int query, int round) {
        return BalancedPairs.order(SYSTEMS, 2 * (query + round / 2) + round % 2);
    }

    public static void main(String[] args) throws Exception {
        Options options = CommandLine.parseOrExit("TpcdsRunner", () -> Options.parse(args));
        double scale = options.scale();
        String queries = options.queries();
        Path data = options.data();
        Path out = options.out();
        int hosts = options.hosts();
        String rate = options.rate();
        boolean profile = options.profile();
        int pairs = options.pairs();
        int partitions = options.partitions();
        boolean control = options.control();
        boolean rdmaFirst = options.rdmaFirst();
        String sf = String.format(Locale.ROOT, "sf%s", scale).replace(".0", "").replace('.', '_');
        if (data == null) {
            data = Path.of("benchmarks", "data", "tpcds-" + sf);
        }
        if (out == null) {
            out = Path.of("benchmarks", "results", "tpcds-" + sf + (hosts > 0 ? "-" + hosts + "hosts" : "")
                    + (partitions > 0 ? "-p" + partitions : "") + (control ? "-control" : "") + (rdmaFirst ? "-rdma-first" : ""));
        }
        List<Outcome> outcomes;
        if (hosts > 0) {
            String cannot = org.rdmashuffle.benchmarks.cluster.ClusterBed.unavailabilityCause();
            if (cannot != null) {
                System.err.println("--hosts makes hosts as network namespaces, and cannot here: " + cannot + ". Run it as root.");
                System.exit(org.rdmashuffle.benchmarks.cluster.ClusterBed.CANNOT);
            }
            ClusterRun cluster = ClusterRun.start(hosts, rate, 2, null, System.out);
            long startMs = System.currentTimeMillis();
            try (cluster; org.rdmashuffle.benchmarks.cluster.ThreadCpuSampler sampler = options.cpuByThread()
                    ? org.rdmashuffle.benchmarks.cluster.ThreadCpuSampler.start(cluster.runDir()) : null) {
                int workers = hosts;
                Path logs = out;
                boolean recorded = profile; // both applications alike, each into its own directory
                boolean controlled = control;
                outcomes = run(scale, queries, pairs, partitions, rdmaFirst, data.toAbsolutePath(), out, shuffle -> Server.onCluster(
                                controlled ? control(shuffle) : shuffle, cluster, workers,
                                recorded ? List.of(cluster.profilingConf(shuffle, System.out)) : List.of()),
                        hosts + " Worker hosts" + (rate == null ? ", links unshaped" : ", links shaped to " + rate + " (tbf)")
                                + (control ? CONTROL : "") + (rdmaFirst ? "; the rdma-shuffle application started first" : ""));
                if (sampler != null) { // executors that ended with their application count to their last sample
                    List<String> table = ExecutorThreadsCpu.table(sampler.executorsByApplication(startMs, System.currentTimeMillis()));
                    Files.write(out.resolve("executor-threads-cpu.md"), table);
                    System.out.println("executors' CPU over the run, by application (" + out.resolve("executor-threads-cpu.md") + "):");
                    table.forEach(System.out::println);
                }
                System.out.println("logs: " + cluster.logs() + " (results in " + logs + ")");
            }
            System.out.printf("cluster torn down: %d namespaces and %d processes left behind%n", cluster.leftNamespaces().size(),
                    cluster.leftProcesses().size());
        } else {
            Path local = out;
            boolean controlled = control;
            outcomes = run(scale, queries, pairs, partitions, rdmaFirst, data, out, shuffle -> Server.local(controlled ? control(shuffle) : shuffle,
                    local.resolve(shuffle + ".log")), "local-cluster, 2 executors each, 127.0.0.1" + (control ? CONTROL : ""));
        }
        long bad = outcomes.stream().filter(o -> o.verdict().startsWith("MISMATCH") || o.verdict().startsWith("FAIL rdma")
                || o.verdict().startsWith("FAIL built-in")).count();
        System.exit(bad == 0 ? 0 : 1);
    }

    private static final String CONTROL = "; CONTROL: both applications on the built-in shuffle, the rdma-shuffle columns are "
            + "the second one's";

    /** In the control experiment the application that would run the plugin runs the built-in shuffle. */
    private static String control(String shuffle) {
        return shuffle.equals("rdma") ? "builtin-control" : shuffle;
    }

    /** Argument {@code i}, a whole number above 0, or an error naming the option. */
    static int positive(String option, String[] args, int i) {
        return CommandLine.atLeast(option, CommandLine.value(args, i, option), 1);
    }

    /** Starts one of the two applications. */
    interface Launcher {
        Server start(String shuffle) throws Exception;
    }

    /** Runs the queries both ways in one balanced pair on local-cluster applications and writes the results. */
    public static List<Outcome> run(double scale, String queryNames, Path data, Path out) throws Exception {
        return run(scale, queryNames, 1, 0, data, out);
    }

    /**
     * The same in {@code pairs} balanced pairs (2 x {@code pairs} rounds), with {@code
     * spark.sql.shuffle.partitions} set on both sides when {@code partitions} is above 0; the outcomes
     * of every round in order.
     */
    public static List<Outcome> run(double scale, String queryNames, int pairs, int partitions, Path data, Path out)
            throws Exception {
        Files.createDirectories(out);
        return run(scale, queryNames, pairs, partitions, false, data, out, shuffle -> Server.local(shuffle, out.resolve(shuffle + ".log")),
                "local-cluster, 2 executors each, 127.0.0.1");
    }

    /**
     * Runs the queries both ways in {@code pairs} balanced pairs of rounds ({@link #order}) and writes
     * every round and the pairs' summary; the outcomes of every round in order. {@code partitions} above
     * 0 sets {@code spark.sql.shuffle.partitions} on both sides.
     */
    private static List<Outcome> run(double scale, String queryNames, int pairs, int partitions, boolean rdmaFirst, Path data,
                                     Path out, Launcher launcher, String where) throws Exception {
        Map<String, String> queries = TpcdsQueries.select(queryNames);
        List<Table> tables = TpcdsQueries.tablesUsed(queries);
        Files.createDirectories(data);
        Files.createDirectories(out);
        Path scratch = Files.createTempDirectory("tpcds-results");
        List<Outcome> outcomes = new ArrayList<>();
        System.out.printf("TPC-DS scale %s: %d queries over %d tables; data %s; both Spark applications starting (%s)%n", scale,
                queries.size(), tables.size(), data.toAbsolutePath(), where);
        try (Server startedFirst = launcher.start(rdmaFirst ? "rdma" : "builtin");
             Server startedSecond = launcher.start(rdmaFirst ? "builtin" : "rdma")) {
            Server builtin = rdmaFirst ? startedSecond : startedFirst;
            Server rdma = rdmaFirst ? startedFirst : startedSecond;
            long t0 = System.nanoTime();
            expect(builtin.call("generate " + scale + " " + data.toAbsolutePath() + " "
                    + tables.stream().map(Table::getName).collect(Collectors.joining(","))), "DONE generate");
            System.out.printf("data ready in %d s%n", (System.nanoTime() - t0) / 1_000_000_000);
            expect(builtin.call("register " + data.toAbsolutePath()), "DONE register");
            expect(rdma.call("register " + data.toAbsolutePath()), "DONE register");
            if (partitions > 0) {
                String set = "DONE set spark.sql.shuffle.partitions=" + partitions;
                expect(builtin.call("set spark.sql.shuffle.partitions " + partitions), set);
                expect(rdma.call("set spark.sql.shuffle.partitions " + partitions), set);
                where += ", spark.sql.shuffle.partitions=" + partitions;
            }
            // One unrecorded query each first: JIT, connections and the engines' start are not the queries' cost.
            String first = queries.keySet().iterator().next();
            expect(builtin.call("run " + first + " " + scratch.resolve("warm-up.builtin")), "DONE run");
            expect(rdma.call("run " + first + " " + scratch.resolve("warm-up.rdma")), "DONE run");
            List<List<Outcome>> byRound = new ArrayList<>();
            int rounds = 2 * pairs;
            for (int round = 0; round < rounds; round++) {
                List<Outcome> these = new ArrayList<>();
                int i = 0;
                for (String q : queries.keySet()) {
                    Path bFile = scratch.resolve(q + ".builtin");
                    Path rFile = scratch.resolve(q + ".rdma");
                    List<String> order = order(i, round);
                    Map<String, String> replies = new java.util.HashMap<>();
                    for (String side : order) {
                        replies.put(side, side.equals("builtin") ? builtin.call("run " + q + " " + bFile)
                                : rdma.call("run " + q + " " + rFile));
                    }
                    i++;
                    Outcome o = outcome(q, replies.get("builtin"), replies.get("rdma"), bFile, rFile, builtin, scratch);
                    these.add(o);
                    System.out.printf("round %d/%d (pair %d, %s first) [%3d/%d] %-5s built-in %6d ms, rdma %6d ms (%.2f), shuffle %8.1f MB "
                            + "(rdma side: %.1f MB over the engine, %.1f MB over Spark's transport), %5d rows: %s%n", round + 1, rounds,
                            round / 2 + 1, order.getFirst().equals("builtin") ? "built-in" : "rdma", i, queries.size(), q, o.builtinMs(),
                            o.rdmaMs(), o.ratio(), o.shuffleReadBytes() / 1e6, o.rdma().rdmaBytes() / 1e6, o.rdma().builtinBytes() / 1e6,
                            o.builtinRows(), o.verdict());
                    System.out.println("        " + StageSums.line(o));
                }
                write(these, scale, where + ", round " + (round + 1) + " of " + rounds + " (pair " + (round / 2 + 1) + " of " + pairs + ")",
                        out.resolve("round-" + (round + 1)));
                byRound.add(these);
                outcomes.addAll(these);
            }
            RoundSummary.write(byRound, scale, where, out);
        }
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
            return new Outcome(q, field(b, 2), field(r, 2), field(b, 3), field(b, 4), field(b, 5), field(r, 5), Carried.of(b, false),
                    Carried.of(r, true), verdict, stages(bFile), stages(rFile));
        }
        String verdict;
        List<String> bLines = Files.readAllLines(bFile);
        if (bLines.equals(Files.readAllLines(rFile))) {
            verdict = bLines.isEmpty() ? "empty" : "match";
        } else {
            Path again = scratch.resolve(q + ".builtin-again");
            String b2 = builtin.call("run " + q + " " + again);
            boolean stable = b2.startsWith("DONE") && Files.readAllLines(again).equals(Files.readAllLines(bFile));
            verdict = stable ? "MISMATCH (built-in is stable, rdma differs)" : "nondeterministic (built-in differs from itself)";
        }
        return new Outcome(q, field(b, 2), field(r, 2), field(b, 3), field(b, 4), field(b, 5), field(r, 5), Carried.of(b, false),
                Carried.of(r, true), verdict, stages(bFile), stages(rFile));
    }

    /** The stages the query server wrote beside a result file; none if it wrote none (the query failed). */
    private static List<StageAccounting.Stage> stages(Path resultFile) throws IOException {
        Path file = QueryServer.stagesFile(resultFile);
        return Files.exists(file) ? Files.readAllLines(file).stream().map(StageAccounting::parse).toList() : List.of();
    }

    /** Field {@code i} of "DONE run ms read write rows remote rdmaBytes fallbackBlocks fallbackBytes", 0 when absent. */
    private static long field(String reply, int i) {
        String[] f = reply.split(" ");
        return f.length > i && f[0].equals("DONE") ? Long.parseLong(f[i]) : 0;
    }

    private static void write(List<Outcome> outcomes, double scale, String where, Path out) throws IOException {
        Files.createDirectories(out);
        StringBuilder csv = new StringBuilder("query,builtin_ms,rdma_ms,ratio,shuffle_read_bytes,shuffle_write_bytes,builtin_rows,"
                + "rdma_rows,builtin_remote_bytes,builtin_bytes_over_engine,builtin_bytes_over_builtin,rdma_remote_bytes,"
                + "rdma_bytes_over_engine,rdma_bytes_over_builtin,rdma_blocks_over_builtin,verdict\n");
        StringBuilder md = new StringBuilder("| query | built-in ms | rdma-shuffle ms | ratio | shuffle read MB | rows (built-in / rdma) "
                + "| rdma side: MB over the engine / over Spark's transport | result |\n|---|---|---|---|---|---|---|---|\n");
        long bTotal = 0;
        long rTotal = 0;
        long remote = 0;
        long overRdma = 0;
        long fallbackBlocks = 0;
        for (Outcome o : outcomes) {
            csv.append(String.join(",", o.query(), Long.toString(o.builtinMs()), Long.toString(o.rdmaMs()),
                    String.format(Locale.ROOT, "%.3f", o.ratio()), Long.toString(o.shuffleReadBytes()),
                    Long.toString(o.shuffleWriteBytes()), Long.toString(o.builtinRows()), Long.toString(o.rdmaRows()),
                    Long.toString(o.builtin().remoteBytes()), Long.toString(o.builtin().rdmaBytes()),
                    Long.toString(o.builtin().builtinBytes()), Long.toString(o.rdma().remoteBytes()), Long.toString(o.rdma().rdmaBytes()),
                    Long.toString(o.rdma().builtinBytes()), Long.toString(o.rdma().fallbackBlocks()), '"' + o.verdict() + '"'))
                    .append('\n');
            md.append(String.format(Locale.ROOT, "| %s | %d | %d | %.2f | %.1f | %d / %d | %.1f / %.1f | %s |%n", o.query(),
                    o.builtinMs(), o.rdmaMs(), o.ratio(), o.shuffleReadBytes() / 1e6, o.builtinRows(), o.rdmaRows(),
                    o.rdma().rdmaBytes() / 1e6, o.rdma().builtinBytes() / 1e6, o.verdict()));
            if (o.comparable()) {
                bTotal += o.builtinMs();
                rTotal += o.rdmaMs();
            }
            remote += o.rdma().remoteBytes();
            overRdma += o.rdma().rdmaBytes();
            fallbackBlocks += o.rdma().fallbackBlocks();
        }
        long matched = outcomes.stream().filter(o -> o.verdict().equals("match")).count();
        long empty = outcomes.stream().filter(o -> o.verdict().equals("empty")).count();
        long nondet = outcomes.stream().filter(o -> o.verdict().startsWith("nondeterministic")).count();
        long bothFailed = outcomes.stream().filter(o -> o.verdict().startsWith("FAIL both")).count();
        String summary = String.format(Locale.ROOT, "TPC-DS scale %s (%s), %d queries: %d identical, %d empty on both, %d not "
                + "deterministic on the built-in shuffle itself, %d failing on both shuffles alike, %d different or failing on "
                + "one. Total time over the comparable ones: built-in %.1f s, rdma-shuffle %.1f s, ratio %.3f. On the rdma side "
                + "%.1f of %.1f remote MB came over the engine (%d blocks over Spark's transport).%n", scale, where, outcomes.size(),
                matched, empty, nondet, bothFailed, outcomes.size() - matched - empty - nondet - bothFailed, bTotal / 1e3,
                rTotal / 1e3, bTotal == 0 ? Double.NaN : (double) rTotal / bTotal, overRdma / 1e6, remote / 1e6, fallbackBlocks);
        Files.writeString(out.resolve("results.csv"), csv);
        Files.writeString(out.resolve("stages.csv"), StageSums.csv(outcomes));
        Files.writeString(out.resolve("results.md"), summary + "\n" + md + "\n" + StageSums.markdown(outcomes));
        List<String> labels = outcomes.stream().map(Outcome::query).toList();
        Charts.bars(out.resolve("time-ratio.png"), "TPC-DS sf " + scale + ": query time, rdma-shuffle / built-in (below 1: faster)",
                "ratio", labels, outcomes.stream().mapToDouble(o -> Double.isNaN(o.ratio()) ? 0 : o.ratio()).toArray(), 1.0,
                new Color(60, 110, 180));
        Charts.bars(out.resolve("total-time.png"), "TPC-DS sf " + scale + ": total query time (s)", "seconds",
                List.of("built-in", "rdma-shuffle"), new double[] {bTotal / 1e3, rTotal / 1e3}, Double.NaN, new Color(90, 150, 90));
        Charts.bars(out.resolve("shuffle-bytes.png"), "TPC-DS sf " + scale + ": shuffle bytes read per query (MB)", "MB", labels,
                outcomes.stream().mapToDouble(o -> o.shuffleReadBytes() / 1e6).toArray(), Double.NaN, new Color(200, 120, 50));
        System.out.print(summary);
        System.out.print(StageSums.totals(outcomes));
        System.out.println("written: " + out.resolve("results.md") + ", results.csv, stages.csv, time-ratio.png, total-time.png, shuffle-bytes.png");
    }
}
