package org.rdmashuffle.benchmarks.spark;

import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.executor.ShuffleReadMetrics;
import org.apache.spark.executor.ShuffleWriteMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.rdmashuffle.spark.RdmaShuffleManager;
import scala.Tuple2;

/**
 * The main job: a shuffle-heavy Spark job in local-cluster mode (two executor JVMs), through this
 * plugin on its embedded default (the software provider), or through Spark's built-in shuffle.
 * {@code rows} rows of (key, 64-character random text) are grouped by key, so every row crosses the
 * shuffle (about 350 MB at the default 5,000,000 rows, Kryo-serialized, lz4).
 *
 * <pre>
 *   ShuffleJob [--rows N] [--partitions P] [--shuffle rdma|builtin] [--compare ROUNDS]
 * </pre>
 * It prints the result (identical either way), the shuffle metrics, and what carried the data.
 * {@code --compare R} runs the job R times each way, alternated, and prints the ratios.
 */
public final class ShuffleJob {
    /** What one run produced and measured. */
    record Run(String shuffle, String result, long wallMs, long shuffleWriteBytes, long remoteBytesRead, long localBytesRead,
               long fetchWaitMs, long recordsRead, long remoteBlocks, List<String> carriers) {
    }

    /** Sums the shuffle metrics of every finished task. */
    private static final class Metrics extends SparkListener {
        final AtomicLong written = new AtomicLong();
        final AtomicLong remote = new AtomicLong();
        final AtomicLong local = new AtomicLong();
        final AtomicLong waitMs = new AtomicLong();
        final AtomicLong records = new AtomicLong();
        final AtomicLong remoteBlocks = new AtomicLong();

        @Override
        public void onTaskEnd(SparkListenerTaskEnd e) {
            if (e.taskMetrics() == null) {
                return;
            }
            ShuffleWriteMetrics w = e.taskMetrics().shuffleWriteMetrics();
            ShuffleReadMetrics r = e.taskMetrics().shuffleReadMetrics();
            written.addAndGet(w.bytesWritten());
            remote.addAndGet(r.remoteBytesRead());
            local.addAndGet(r.localBytesRead());
            waitMs.addAndGet(r.fetchWaitTime());
            records.addAndGet(r.recordsRead());
            remoteBlocks.addAndGet(r.remoteBlocksFetched());
        }
    }

    public static void main(String[] args) throws Exception {
        int rows = 5_000_000;
        int partitions = 16;
        String shuffle = "rdma";
        int compare = 0;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--rows" -> rows = Integer.parseInt(args[++i]);
                case "--partitions" -> partitions = Integer.parseInt(args[++i]);
                case "--shuffle" -> shuffle = args[++i];
                case "--compare" -> compare = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i]
                        + " (usage: ShuffleJob [--rows N] [--partitions P] [--shuffle rdma|builtin] [--compare ROUNDS])");
            }
        }
        if (compare == 0) {
            print(run(shuffle, rows, partitions));
            return;
        }
        List<Run> runs = new ArrayList<>();
        for (int r = 0; r < compare; r++) {
            for (String s : r % 2 == 0 ? List.of("builtin", "rdma") : List.of("rdma", "builtin")) {
                Run run = run(s, rows, partitions);
                System.out.printf("round %d  %-8s %6d ms  fetch wait %5d ms  result %s%n", r + 1, s, run.wallMs(), run.fetchWaitMs(),
                        run.result());
                runs.add(run);
            }
        }
        String reference = runs.get(0).result();
        if (runs.stream().anyMatch(x -> !x.result().equals(reference))) {
            throw new IllegalStateException("the results differ between runs: " + runs.stream().map(Run::result).toList());
        }
        long[] builtin = runs.stream().filter(x -> x.shuffle().equals("builtin")).mapToLong(Run::wallMs).sorted().toArray();
        long[] rdma = runs.stream().filter(x -> x.shuffle().equals("rdma")).mapToLong(Run::wallMs).sorted().toArray();
        long[] builtinWait = runs.stream().filter(x -> x.shuffle().equals("builtin")).mapToLong(Run::fetchWaitMs).sorted().toArray();
        long[] rdmaWait = runs.stream().filter(x -> x.shuffle().equals("rdma")).mapToLong(Run::fetchWaitMs).sorted().toArray();
        System.out.println();
        System.out.println("| shuffle | wall ms (median of " + compare + ") | shuffle read wait ms (median) |");
        System.out.println("|---|---|---|");
        System.out.println("| built-in | " + median(builtin) + " | " + median(builtinWait) + " |");
        System.out.println("| rdma-shuffle (" + runs.stream().filter(x -> x.shuffle().equals("rdma")).findFirst().get().carriers().get(0)
                .replaceAll(".*RDMA engine on (\\w+).*", "$1") + ") | " + median(rdma) + " | " + median(rdmaWait) + " |");
        System.out.printf("wall-time ratio rdma/built-in: %.2f (below 1 is faster); identical results: %s%n",
                (double) median(rdma) / median(builtin), reference);
    }

    private static long median(long[] sorted) {
        return sorted.length % 2 == 1 ? sorted[sorted.length / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
    }

    static Run run(String shuffle, int rows, int partitions) throws Exception {
        SparkConf conf = LocalCluster.conf("rdma-shuffle main job", shuffle);
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            Metrics metrics = new Metrics();
            sc.sc().addSparkListener(metrics);
            sc.parallelize(IntStream.range(0, 4).boxed().toList(), 4).count(); // executors up before the clock starts
            long t0 = System.nanoTime();
            int perPartition = rows / partitions;
            JavaPairRDD<Long, String> data = sc.parallelize(IntStream.range(0, partitions).boxed().toList(), partitions)
                    .flatMapToPair(p -> new java.util.Iterator<Tuple2<Long, String>>() {
                        final SplittableRandom random = new SplittableRandom(p * 0x9E3779B97F4A7C15L);
                        final byte[] raw = new byte[48];
                        int left = perPartition;

                        public boolean hasNext() {
                            return left > 0;
                        }

                        public Tuple2<Long, String> next() {
                            left--;
                            for (int i = 0; i < raw.length; i += 8) {
                                long v = random.nextLong();
                                for (int k = 0; k < 8; k++) {
                                    raw[i + k] = (byte) (v >>> (8 * k));
                                }
                            }
                            return new Tuple2<>(random.nextLong(100_000), Base64.getEncoder().encodeToString(raw)); // 64 chars
                        }
                    });
            List<Tuple2<Long, long[]>> groups = data.groupByKey(partitions).mapValues(values -> {
                long count = 0;
                long hash = 0;
                for (String v : values) {
                    count++;
                    hash += v.hashCode();
                }
                return new long[] {count, hash};
            }).collect();
            long wallMs = (System.nanoTime() - t0) / 1_000_000;
            long total = 0;
            long checksum = 0;
            for (Tuple2<Long, long[]> g : groups) {
                total += g._2()[0];
                // Order-independent: groups arrive in whatever order the reducers finished.
                checksum += (g._1() * 0x9E3779B97F4A7C15L) ^ (g._2()[1] * 31 + g._2()[0]);
            }
            String result = groups.size() + " keys, " + total + " rows, checksum " + Long.toHexString(checksum);
            Thread.sleep(500); // let the listener bus deliver the last task ends
            Run measured = new Run(shuffle, result, wallMs, metrics.written.get(), metrics.remote.get(), metrics.local.get(),
                    metrics.waitMs.get(), metrics.records.get(), metrics.remoteBlocks.get(), List.of());
            List<String> carriers = shuffle.equals("rdma") ? carriers(sc) : List.of("Spark's built-in shuffle");
            return new Run(measured.shuffle(), measured.result(), measured.wallMs(), measured.shuffleWriteBytes(),
                    measured.remoteBytesRead(), measured.localBytesRead(), measured.fetchWaitMs(), measured.recordsRead(),
                    measured.remoteBlocks(), carriers);
        }
    }

    /** What carried each executor's shuffle, asked of the executors themselves. */
    private static List<String> carriers(JavaSparkContext sc) {
        return sc.parallelize(IntStream.range(0, 32).boxed().toList(), 32)
                .map(i -> "executor " + org.apache.spark.SparkEnv.get().executorId() + ": " + RdmaShuffleManager.describe())
                .distinct().collect().stream().sorted().toList();
    }

    private static void print(Run r) {
        System.out.println();
        System.out.println("result:  " + r.result());
        System.out.printf("time:    %d ms (%s shuffle)%n", r.wallMs(), r.shuffle());
        System.out.printf("shuffle: %.1f MB written; read %.1f MB remote + %.1f MB local in %d remote blocks; %d records; "
                + "fetch wait %d ms%n", r.shuffleWriteBytes() / 1e6, r.remoteBytesRead() / 1e6, r.localBytesRead() / 1e6,
                r.remoteBlocks(), r.recordsRead(), r.fetchWaitMs());
        System.out.println("carried by:");
        r.carriers().forEach(c -> System.out.println("  " + c));
    }
}
