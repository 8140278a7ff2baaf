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
import org.rdmashuffle.benchmarks.spark.LocalCluster;

/**
 * One Spark application (one shuffle: {@code builtin} or {@code rdma}) that the {@link TpcdsRunner}
 * drives over stdin/stdout, so both applications stay up and queries alternate between them without
 * restarting Spark. Replies are lines starting with {@code @@ }:
 * <ul>
 * <li>{@code generate <scale> <dir> <table,...>} → {@code @@ DONE generate <tables made>}</li>
 * <li>{@code register <dir>} → {@code @@ DONE register}</li>
 * <li>{@code run <query> <result file>} → {@code @@ DONE run <ms> <shuffle read bytes> <shuffle write bytes> <rows>}</li>
 * </ul>
 * A failure answers {@code @@ FAIL <what> <message>}.
 */
public final class QueryServer {
    private static final AtomicLong READ = new AtomicLong();
    private static final AtomicLong WRITTEN = new AtomicLong();

    public static void main(String[] args) throws Exception {
        String shuffle = args[0];
        PrintStream reply = System.out;
        System.setOut(System.err); // anything else printing goes to the log, not the protocol
        // TPC-DS semantics are not ANSI's: at small scales q90 divides by zero, which ANSI mode refuses.
        SparkSession spark = SparkSession.builder().config(LocalCluster.conf("tpcds", shuffle)
                .set("spark.sql.ansi.enabled", "false")).getOrCreate();
        spark.sparkContext().addSparkListener(new SparkListener() {
            @Override
            public void onTaskEnd(SparkListenerTaskEnd e) {
                if (e.taskMetrics() != null) {
                    READ.addAndGet(e.taskMetrics().shuffleReadMetrics().totalBytesRead());
                    WRITTEN.addAndGet(e.taskMetrics().shuffleWriteMetrics().bytesWritten());
                }
            }
        });
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
        READ.set(0);
        WRITTEN.set(0);
        long t0 = System.nanoTime();
        List<Row> rows = spark.sql(text).collectAsList();
        long ms = (System.nanoTime() - t0) / 1_000_000;
        spark.sparkContext().listenerBus().waitUntilEmpty();
        List<String> lines = new ArrayList<>(rows.size());
        for (Row r : rows) {
            lines.add(format(r));
        }
        lines.sort(null);
        Files.write(resultFile, lines);
        return ms + " " + READ.get() + " " + WRITTEN.get() + " " + rows.size();
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
