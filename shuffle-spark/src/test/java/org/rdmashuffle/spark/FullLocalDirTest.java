package org.rdmashuffle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.spark.TaskContext;
import org.apache.spark.TaskFailedReason;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.testing.SmallFilesystem;
import scala.Tuple2;

/**
 * A map task whose local dir fills while it writes its output (issue 52, item 5): every executor's
 * {@code spark.local.dir} is a small tmpfs, filled after the executors start but for room enough for the
 * small maps; map 0's output does not fit. The attempt writing when the disk fills (map 0's, or a small
 * map's beside it: the disk is the executors' both) fails with Spark's own {@code IOException: No space
 * left on device}, as on the built-in shuffle (the writer is Spark's; {@link RdmaShuffleWriter} registers
 * an output only after its commit); the test then frees the space, Spark runs the map again, and the job's
 * answer is right. Of a failed attempt nothing is left: no registration in any executor's engine, no
 * file on the disk, no mapping or descriptor of a deleted file in an executor.
 */
class FullLocalDirTest {
    private static final int MAPS = 4;
    private static final int KEYS = 8;

    @TempDir
    Path scratch;

    /** Map {@code m}'s rows: 1 KiB values of random letters (barely compressible); map 0 six times the others' bytes. */
    private static List<Tuple2<Integer, String>> rows(int m) {
        java.util.Random random = new java.util.Random(m);
        int n = m == 0 ? 6000 : 100;
        List<Tuple2<Integer, String>> rows = new ArrayList<>(n);
        char[] value = new char[1024];
        for (int i = 0; i < n; i++) {
            for (int k = 0; k < value.length; k++) {
                value[k] = (char) ('a' + random.nextInt(26));
            }
            rows.add(new Tuple2<>(i % KEYS, new String(value)));
        }
        return rows;
    }

    private static List<String> expected() {
        Map<Integer, List<String>> groups = new TreeMap<>();
        for (int m = 0; m < MAPS; m++) {
            for (Tuple2<Integer, String> t : rows(m)) {
                groups.computeIfAbsent(t._1(), k -> new ArrayList<>()).add(t._2());
            }
        }
        return groups.entrySet().stream().map(e -> "(" + e.getKey() + "," + Workloads.summary(e.getValue()) + ")").sorted().toList();
    }

    /** Failed map attempts (task id = Spark's map id) and why; frees the disk at the first that ran out of space. */
    private static final class FailedAttempts extends SparkListener {
        final Map<Long, String> reasons = new ConcurrentHashMap<>();
        final List<Throwable> errors = new CopyOnWriteArrayList<>();
        private final SmallFilesystem disk;

        FailedAttempts(SmallFilesystem disk) {
            this.disk = disk;
        }

        @Override
        public void onTaskEnd(SparkListenerTaskEnd e) {
            if (e.reason() instanceof TaskFailedReason failed && "ShuffleMapTask".equals(e.taskType())) {
                String why = failed.toErrorString();
                reasons.put(e.taskInfo().taskId(), why);
                if (why.contains("No space left on device")) {
                    try {
                        disk.freeSpace();
                    } catch (IOException | RuntimeException ex) {
                        errors.add(ex);
                    }
                }
            }
        }
    }

    @Test
    void aMapTaskWhoseLocalDirIsFull_failsNamingNoSpace_isRunAgain_andNothingOfTheFailedAttemptIsLeft() throws Exception {
        try (SmallFilesystem disk = SmallFilesystem.mount(scratch.resolve("local"), 32L << 20)) {
            String root = disk.root().toString();
            // The cleaner off: a GC in the driver would have the executors forget the shuffle (engine and
            // files) while this test counts what is left of it.
            try (JavaSparkContext sc = new JavaSparkContext(SparkClusterSupport.conf("local dir full", true, scratch)
                    .set("spark.task.maxFailures", "4").set("spark.cleaner.referenceTracking", "false"))) {
                SparkClusterSupport.awaitExecutors(sc, 2);
                FailedAttempts failed = new FailedAttempts(disk);
                sc.sc().addSparkListener(failed);
                // Room for the small maps' outputs (100 KiB each, twice while they are written), not for map 0's 6 MB.
                disk.fillLeaving(2L << 20);

                List<String> got = sc.parallelize(java.util.stream.IntStream.range(0, MAPS).boxed().toList(), MAPS)
                        .flatMapToPair(m -> {
                            if (TaskContext.get().attemptNumber() > 0) {
                                awaitSpace(root); // the test frees it once the failure is seen
                            }
                            return rows(m).iterator();
                        })
                        .groupByKey(2).mapValues(Workloads::summary).collect().stream().map(String::valueOf).sorted().toList();

                assertEquals(expected(), got, "the job's answer after the map ran again");
                assertEquals(List.of(), failed.errors, "freeing the disk");
                assertFalse(failed.reasons.isEmpty(), "no map attempt failed: the disk did not fill");
                for (String why : failed.reasons.values()) {
                    assertTrue(why.contains("java.io.IOException: No space left on device"),
                            "a map attempt failed for another reason than the full disk: " + why);
                }
                Set<Long> failedMapIds = failed.reasons.keySet();

                // Nothing of a failed attempt in any engine: each executor's engine knows the outputs that
                // committed (every map's is non-empty) and no more.
                Map<String, String> executors = askEachExecutor(sc, root);
                int outputs = 0;
                for (Map.Entry<String, String> e : executors.entrySet()) {
                    String[] parts = e.getValue().split("\n", 2);
                    outputs += Integer.parseInt(parts[0]);
                    assertEquals("", parts.length > 1 ? parts[1] : "",
                            "executor " + e.getKey() + " maps or holds open a deleted file on the full disk");
                }
                assertEquals(MAPS, outputs, "map outputs the executors' engines know, across " + executors.keySet());

                // On the disk: the committed outputs, no file of a failed attempt, no temporary file left.
                List<String> files = disk.files();
                for (String f : files) {
                    String name = Path.of(f).getFileName().toString();
                    assertTrue(name.matches("shuffle_0_\\d+_0\\.(data|index|checksum\\.\\w+)"), "left on the disk: " + f + " in " + files);
                    long mapId = Long.parseLong(name.split("_")[2]);
                    assertFalse(failedMapIds.contains(mapId), "a file of failed attempt " + mapId + ": " + f);
                }
                assertEquals(MAPS, files.stream().filter(f -> f.endsWith(".data")).count(), "data files on the disk: " + files);
            }
        }
    }

    /** In a task: waits (at most a minute) until the test has freed the disk. */
    private static void awaitSpace(String root) throws InterruptedException {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
        while (SmallFilesystem.isFull(Path.of(root))) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the test did not free " + root + " in a minute");
            }
            Thread.sleep(20);
        }
    }

    /**
     * Each executor's answer, by executor id: the map outputs its engine knows, then one line per mapping
     * ({@code /proc/self/maps}) or descriptor ({@code /proc/self/fd}) of a deleted file under {@code root}.
     */
    private static Map<String, String> askEachExecutor(JavaSparkContext sc, String root) {
        int live = sc.sc().getExecutorIds().size();
        Map<String, String> answers = new TreeMap<>();
        for (int round = 0; round < 10 && answers.size() < live; round++) {
            for (String s : sc.parallelize(java.util.stream.IntStream.range(0, 40).boxed().toList(), 40)
                    .map(i -> org.apache.spark.SparkEnv.get().executorId() + "\t" + EngineShuffleManager.current().engine().mapOutputs()
                            + "\n" + deletedFilesHeld(root)).collect()) {
                String[] p = s.split("\t", 2);
                answers.putIfAbsent(p[0], p[1].strip());
            }
        }
        assertEquals(live, answers.size(), "executors that answered: " + answers.keySet());
        return answers;
    }

    /** This process's mappings and descriptors of deleted files under {@code root}, one a line. */
    private static String deletedFilesHeld(String root) throws IOException {
        StringBuilder held = new StringBuilder();
        for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
            if (line.contains(root) && line.endsWith("(deleted)")) {
                held.append("mapped: ").append(line).append('\n');
            }
        }
        try (var fds = Files.list(Path.of("/proc/self/fd"))) {
            for (Path fd : fds.toList()) {
                String target;
                try {
                    target = Files.readSymbolicLink(fd).toString();
                } catch (IOException closedMeanwhile) {
                    continue;
                }
                if (target.startsWith(root) && target.endsWith("(deleted)")) {
                    held.append("open: ").append(target).append('\n');
                }
            }
        }
        return held.toString();
    }
}
