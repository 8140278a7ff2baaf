package org.rdmashuffle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkException;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What must keep working when things go wrong, each test named after what it provokes. */
class ShuffleFailureTest {
    @TempDir
    Path scratch;

    private static List<String> groupSizes(JavaPairRDD<Integer, String> pairs) {
        return pairs.groupByKey(6).mapValues(Workloads::summary).collect().stream().map(String::valueOf).sorted().toList();
    }

    /** The expected answer, computed without Spark. */
    private static List<String> expectedGroupSizes(int n, int keys) {
        java.util.Map<Integer, long[]> m = new java.util.TreeMap<>();
        for (int i = 0; i < n; i++) {
            long[] a = m.computeIfAbsent(Integer.hashCode(i * 31) % keys, k -> new long[2]);
            a[0]++;
            a[1] += ("value-" + i).hashCode();
        }
        return m.entrySet().stream().map(e -> "(" + e.getKey() + "," + e.getValue()[0] + "/" + e.getValue()[1] + ")").sorted().toList();
    }

    /** Failed stage attempts and why, as the scheduler reports them. */
    private static final class StageFailures extends SparkListener {
        final List<String> reasons = new CopyOnWriteArrayList<>();

        @Override
        public void onStageCompleted(SparkListenerStageCompleted e) {
            if (e.stageInfo().failureReason().isDefined()) {
                reasons.add(e.stageInfo().failureReason().get());
            }
        }
    }

    @Test
    void executorKilledMidShuffle_failsTheFetch_reRunsTheMapStage_andTheResultIsRight() throws Exception {
        // Small fetch requests and a slow reader: the reducers are still fetching when the executor dies.
        SparkConf conf = SparkClusterSupport.conf("executor killed", true, scratch)
                .set("spark.reducer.maxSizeInFlight", "16k").set("spark.reducer.maxReqsInFlight", "1");
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            StageFailures failures = new StageFailures();
            sc.sc().addSparkListener(failures);
            AtomicBoolean killed = new AtomicBoolean();
            String appId = sc.sc().applicationId();
            sc.sc().addSparkListener(new SparkListener() {
                @Override
                public void onTaskStart(SparkListenerTaskStart e) {
                    // The first task of the reduce stage: map outputs exist on both executors now.
                    if (e.stageId() > 0 && killed.compareAndSet(false, true)) {
                        killOneExecutor(appId);
                    }
                }
            });
            List<String> partial = Workloads.pairs(sc, 60_000, 500).partitionBy(new org.apache.spark.HashPartitioner(4))
                    .mapPartitions(records -> {
                        java.util.Map<Integer, long[]> m = new java.util.HashMap<>();
                        int n = 0;
                        while (records.hasNext()) {
                            scala.Tuple2<Integer, String> t = records.next();
                            long[] a = m.computeIfAbsent(t._1(), k -> new long[2]);
                            a[0]++;
                            a[1] += t._2().hashCode();
                            if (++n % 200 == 0) {
                                Thread.sleep(5);
                            }
                        }
                        return m.entrySet().stream().map(e -> "(" + e.getKey() + "," + e.getValue()[0] + "/" + e.getValue()[1] + ")")
                                .iterator();
                    }).collect();
            assertTrue(killed.get(), "no executor was killed");
            assertEquals(expectedGroupSizes(60_000, 500), partial.stream().sorted().toList());
            assertTrue(failures.reasons.stream().anyMatch(r -> r.contains("FetchFailed")),
                    "no fetch failure was reported: " + failures.reasons);
        }
    }

    /** SIGKILLs one executor JVM of the application (found by /proc: its command line is too long for ProcessHandle). */
    private static void killOneExecutor(String appId) {
        try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
            for (Path p : procs.filter(d -> d.getFileName().toString().matches("\\d+")).toList()) {
                String cmd;
                try {
                    cmd = new String(Files.readAllBytes(p.resolve("cmdline")), java.nio.charset.StandardCharsets.UTF_8);
                } catch (IOException gone) {
                    continue;
                }
                if (cmd.contains("CoarseGrainedExecutorBackend") && cmd.contains(appId)) {
                    ProcessHandle.of(Long.parseLong(p.getFileName().toString())).ifPresent(ProcessHandle::destroyForcibly);
                    return;
                }
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        throw new IllegalStateException("no executor process of " + appId + " found");
    }

    @Test
    void corruptedBlockOnDisk_isDetected_reported_andRecomputed() throws Exception {
        SparkConf conf = SparkClusterSupport.conf("corrupted block", true, scratch);
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            StageFailures failures = new StageFailures();
            sc.sc().addSparkListener(failures);
            JavaPairRDD<Integer, Iterable<String>> grouped = Workloads.pairs(sc, 60_000, 500).groupByKey(6);
            grouped.count(); // map outputs written and registered
            int corrupted = 0;
            for (String dir : executorLocalDirs(sc)) {
                corrupted += corruptShuffleData(Path.of(dir));
            }
            assertTrue(corrupted > 0, "no shuffle data file found to corrupt");
            // The map stage is reused: the reducers read the corrupted files.
            List<String> result = grouped.mapValues(Workloads::summary).collect().stream().map(String::valueOf).sorted().toList();
            assertEquals(expectedGroupSizes(60_000, 500), result, "silently wrong after corruption");
            assertTrue(failures.reasons.stream().anyMatch(r -> r.contains("FetchFailed") && r.toLowerCase().contains("corrupt")),
                    "the corruption was not reported as a corrupt fetch: " + failures.reasons);
        }
    }

    /** The block managers' local directories, asked of the executors (Spark caches the root per JVM). */
    private static List<String> executorLocalDirs(JavaSparkContext sc) {
        return sc.parallelize(java.util.stream.IntStream.range(0, 40).boxed().toList(), 40)
                .flatMap(i -> java.util.Arrays.stream(org.apache.spark.SparkEnv.get().blockManager().diskBlockManager().localDirs())
                        .map(File::getAbsolutePath).iterator())
                .distinct().collect();
    }

    /** Flips bytes in the middle of every shuffle data file under {@code dir}; returns how many. */
    private static int corruptShuffleData(Path dir) throws IOException {
        List<Path> files;
        try (Stream<Path> s = Files.walk(dir)) {
            files = s.filter(p -> p.getFileName().toString().matches("shuffle_\\d+_\\d+_0\\.data")).toList();
        }
        for (Path f : files) {
            try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
                long len = raf.length();
                for (long at = len / 4; at < len - 16; at += Math.max(1, len / 8)) {
                    raf.seek(at);
                    int b = raf.read();
                    raf.seek(at);
                    raf.write(b ^ 0x5A);
                }
            }
        }
        return files.size();
    }

    @Test
    void engineCannotStart_fallsBackToTheBuiltInTransport_withOneWarning() throws Exception {
        SparkConf conf = SparkClusterSupport.conf("fallback", true, scratch).set("spark.shuffle.rdma.device", "no-such-device");
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            assertEquals(expectedGroupSizes(20_000, 100), groupSizes(Workloads.pairs(sc, 20_000, 100)));
            long[] counts = SparkClusterSupport.fetchCounts(sc);
            assertEquals(0, counts[0], "nothing can come over RDMA without an engine");
            assertTrue(counts[1] > 0, "the built-in transport carried nothing");
            List<String> carriers = SparkClusterSupport.describeExecutors(sc);
            assertTrue(carriers.stream().allMatch(d -> d.contains("Spark's built-in transport") && d.contains("no-such-device")),
                    carriers.toString());
        }
    }

    @Test
    void engineCannotStart_withFallbackOff_failsTheJobNamingTheCause() throws Exception {
        SparkConf conf = SparkClusterSupport.conf("no fallback", true, scratch).set("spark.shuffle.rdma.device", "no-such-device")
                .set(RdmaShuffleManager.FALLBACK, "false").set("spark.task.maxFailures", "1");
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            SparkException e = assertThrows(SparkException.class, () -> groupSizes(Workloads.pairs(sc, 1000, 10)));
            assertTrue(e.getMessage().contains("no-such-device") && e.getMessage().contains(RdmaShuffleManager.FALLBACK),
                    e.getMessage());
        }
    }

    /** Map {@code m}'s rows: key 0 gets 1 KiB values of random letters (barely compressible), key 1 short ones. */
    private static List<scala.Tuple2<Integer, String>> bigAndSmallRows(int m) {
        java.util.Random random = new java.util.Random(m);
        List<scala.Tuple2<Integer, String>> rows = new java.util.ArrayList<>();
        char[] big = new char[1024];
        for (int i = 0; i < 1500; i++) {
            for (int k = 0; k < big.length; k++) {
                big[k] = (char) ('a' + random.nextInt(26));
            }
            rows.add(new scala.Tuple2<>(0, new String(big)));
        }
        for (int i = 0; i < 100; i++) {
            rows.add(new scala.Tuple2<>(1, "small-" + m + "-" + i));
        }
        return rows;
    }

    /** Before, such a block failed as too large and came over Spark's transport; now it streams in pieces over RDMA. */
    @Test
    void aBlockLargerThanTheReducersFetchBuffers_comesOverRdmaInPieces_andNoStageReRuns() throws Exception {
        // 1 MiB of fetch buffers; each map's key-0 block is about 1.5 MB. Fallback off: nothing else may carry it.
        SparkConf conf = SparkClusterSupport.conf("larger than the buffers", true, scratch)
                .set("spark.shuffle.rdma.fetchBufferMemory", "1m").set("spark.shuffle.rdma.fallback", "false");
        int maps = 8;
        List<String> expected = new java.util.ArrayList<>();
        for (int key = 0; key < 2; key++) {
            List<String> values = new java.util.ArrayList<>();
            for (int m = 0; m < maps; m++) {
                for (scala.Tuple2<Integer, String> t : bigAndSmallRows(m)) {
                    if (t._1() == key) {
                        values.add(t._2());
                    }
                }
            }
            expected.add("(" + key + "," + Workloads.summary(values) + ")");
        }
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            StageFailures failures = new StageFailures();
            sc.sc().addSparkListener(failures);
            List<String> got = sc.parallelize(java.util.stream.IntStream.range(0, maps).boxed().toList(), maps)
                    .flatMapToPair(m -> bigAndSmallRows(m).iterator()).groupByKey(2).mapValues(Workloads::summary).collect()
                    .stream().map(String::valueOf).sorted().toList();
            assertEquals(expected, got);
            assertEquals(List.of(), failures.reasons, "no fetch failed, no stage ran again");
            long[] counts = SparkClusterSupport.fetchCounts(sc);
            assertTrue(counts[0] > 0, "blocks came over RDMA: " + java.util.Arrays.toString(counts));
            assertEquals(0, counts[1], "none over Spark's transport: " + java.util.Arrays.toString(counts));
        }
    }
}
