package org.rdmashuffle.benchmarks.tpcds;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.api.java.JavaSparkContext;
import org.rdmashuffle.benchmarks.spark.LocalCluster;
import org.rdmashuffle.benchmarks.spark.StageAccounting;
import org.rdmashuffle.spark.RdmaShuffleManager;

/**
 * One Spark application (one shuffle: {@code builtin} or {@code rdma}) that the {@link TpcdsRunner}
 * drives over stdin/stdout, so both applications stay up and queries alternate between them without
 * restarting Spark. Replies are lines starting with {@code @@ }:
 * <ul>
 * <li>{@code generate <scale> <dir> <table,...>} → {@code @@ DONE generate <tables made>}</li>
 * <li>{@code register <dir>} → {@code @@ DONE register}</li>
 * <li>{@code set <spark.sql.key> <value>} → {@code @@ DONE set <key>=<value read back>}: a SQL setting for the queries that follow
 *     (the runner's {@code --shuffle-partitions})</li>
 * <li>{@code run <query> <result file>} → {@code @@ DONE run <ms> <shuffle read bytes> <shuffle write bytes> <rows>
 *     <remote bytes> <bytes over the engine (a device or the software provider)> <blocks over the built-in transport> <bytes over the built-in transport>}:
 *     the remote bytes are Spark's own count (of what tasks consumed); the others are what the
 *     executors' RdmaShuffleManagers counted during the query (all 0 on the built-in shuffle); the
 *     query's stages, each with the sums of its tasks' metrics ({@link StageAccounting}), are written
 *     beside the result file ({@link #stagesFile})</li>
 * </ul>
 * A failure answers {@code @@ FAIL <what> <message>}. Started by {@code spark-submit} (the cluster bed)
 * it takes its master and settings from there, and waits for {@code executors} executors.
 *
 * <pre>
 *   QueryServer builtin|rdma [executors]
 * </pre>
 */
public final class QueryServer {
    private static final AtomicLong READ = new AtomicLong();
    private static final AtomicLong WRITTEN = new AtomicLong();
    private static final AtomicLong REMOTE = new AtomicLong();
    private static final StageAccounting STAGES = new StageAccounting();

    public static void main(String[] args) throws Exception {
        String shuffle = args[0];
        PrintStream reply = System.out;
        System.setOut(System.err); // anything else printing goes to the log, not the protocol
        // TPC-DS semantics are not ANSI's: at small scales q90 divides by zero, which ANSI mode refuses.
        int executors = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        SparkSession spark = SparkSession.builder().config((LocalCluster.submitted() ? LocalCluster.submittedConf("tpcds", shuffle)
                : LocalCluster.conf("tpcds", shuffle)).set("spark.sql.ansi.enabled", "false")).getOrCreate();
        LocalCluster.awaitExecutors(JavaSparkContext.fromSparkContext(spark.sparkContext()), executors);
        spark.sparkContext().addSparkListener(new SparkListener() {
            @Override
            public void onTaskEnd(SparkListenerTaskEnd e) {
                if (e.taskMetrics() != null) {
                    READ.addAndGet(e.taskMetrics().shuffleReadMetrics().totalBytesRead());
                    WRITTEN.addAndGet(e.taskMetrics().shuffleWriteMetrics().bytesWritten());
                    REMOTE.addAndGet(e.taskMetrics().shuffleReadMetrics().remoteBytesRead());
                }
            }
        });
        spark.sparkContext().addSparkListener(STAGES);
        reply.println("@@ READY");
        reply.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.equals("quit")) {
            String[] cmd = line.split(" ");
            try {
                switch (cmd[0]) {
                    case "generate" -> reply.println("@@ DONE generate " + TpcdsData.generate(spark, Double.parseDouble(cmd[1]),
                            Path.of(cmd[2]), java.util.Arrays.stream(cmd[3].split(",")).map(io.trino.tpcds.Table::getTable).toList()));
                    case "register" -> {
                        TpcdsData.register(spark, Path.of(cmd[1]));
                        reply.println("@@ DONE register");
                    }
                    case "run" -> reply.println("@@ DONE run " + run(spark, cmd[1], Path.of(cmd[2])));
                    case "set" -> {
                        if (cmd.length != 3 || !cmd[1].startsWith("spark.sql.")) {
                            throw new IllegalArgumentException("set takes a spark.sql.* key and a value, got: " + line);
                        }
                        spark.conf().set(cmd[1], cmd[2]);
                        reply.println("@@ DONE set " + cmd[1] + "=" + spark.conf().get(cmd[1]));
                    }
                    default -> reply.println("@@ FAIL " + cmd[0] + " unknown command");
                }
            } catch (Exception | Error e) {
                StringWriter trace = new StringWriter();
                e.printStackTrace(new PrintWriter(trace));
                System.err.println(trace);
                reply.println("@@ FAIL " + cmd[0] + " " + String.valueOf(e.getMessage()).replace('\n', ' '));
            }
            reply.flush();
        }
        spark.stop();
    }

    private static String run(SparkSession spark, String query, Path resultFile) throws Exception {
        String text = TpcdsQueries.select(query).get(query);
        spark.sparkContext().listenerBus().waitUntilEmpty();
        JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        long[] before = carried(sc);
        READ.set(0);
        WRITTEN.set(0);
        REMOTE.set(0);
        STAGES.begin();
        long t0 = System.nanoTime();
        List<Row> rows = spark.sql(text).collectAsList();
        long ms = (System.nanoTime() - t0) / 1_000_000;
        spark.sparkContext().listenerBus().waitUntilEmpty();
        STAGES.end();
        Files.write(stagesFile(resultFile), STAGES.stages().stream().map(StageAccounting::line).toList());
        long[] after = carried(sc);
        List<String> lines = new ArrayList<>(rows.size());
        for (Row r : rows) {
            lines.add(format(r));
        }
        lines.sort(null);
        Files.write(resultFile, lines);
        return ms + " " + READ.get() + " " + WRITTEN.get() + " " + rows.size() + " " + REMOTE.get() + " " + (after[2] - before[2])
                + " " + (after[1] - before[1]) + " " + (after[3] - before[3]);
    }

    /** Where the stages of the query whose result goes to {@code resultFile} are written, a line each. */
    static Path stagesFile(Path resultFile) {
        return resultFile.resolveSibling(resultFile.getFileName() + ".stages");
    }

    /**
     * The executors' fetch counters ({@link RdmaShuffleManager#fetchCounts()}), summed: asked of every
     * registered executor (tasks until each has answered, bounded), between queries, so untimed. The
     * job has no shuffle of its own, so it adds nothing to what it measures.
     */
    static long[] carried(JavaSparkContext sc) {
        java.util.Set<String> expected = new java.util.HashSet<>(scala.jdk.javaapi.CollectionConverters.asJava(
                sc.sc().getExecutorIds()));
        java.util.Map<String, long[]> seen = new java.util.HashMap<>();
        for (int attempt = 0; attempt < 20 && !seen.keySet().containsAll(expected); attempt++) {
            int tasks = 8 * Math.max(1, expected.size());
            // collect(), not distinct(): a shuffle here would itself be fetched over RDMA and counted.
            for (String answer : sc.parallelize(java.util.stream.IntStream.range(0, tasks).boxed().toList(), tasks).map(i -> {
                long[] c = RdmaShuffleManager.fetchCounts();
                return org.apache.spark.SparkEnv.get().executorId() + " " + c[0] + " " + c[1] + " " + c[2] + " " + c[3];
            }).collect()) {
                String[] f = answer.split(" ");
                long[] counts = {Long.parseLong(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3]), Long.parseLong(f[4])};
                seen.merge(f[0], counts, (a, b) -> {
                    for (int i = 0; i < a.length; i++) {
                        a[i] = Math.max(a[i], b[i]); // counters only grow: the latest answer
                    }
                    return a;
                });
            }
        }
        if (!seen.keySet().containsAll(expected)) {
            throw new IllegalStateException("executors " + expected + " did not all report their fetch counters: " + seen.keySet());
        }
        long[] sum = new long[4];
        for (String id : expected) {
            for (int i = 0; i < 4; i++) {
                sum[i] += seen.get(id)[i];
            }
        }
        return sum;
    }

    /**
     * A row as comparable text. Doubles keep 12 significant digits: their sums depend on the order
     * rows arrive in, which no shuffle fixes.
     */
    static String format(Row r) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < r.length(); i++) {
            Object v = r.get(i);
            if (i > 0) {
                b.append('|');
            }
            if (v == null) {
                b.append("NULL");
            } else if (v instanceof Double || v instanceof Float) {
                b.append(String.format(Locale.ROOT, "%.12g", ((Number) v).doubleValue()));
            } else if (v instanceof BigDecimal d) {
                b.append(d.toPlainString());
            } else {
                b.append(v);
            }
        }
        return b.toString();
    }
}
