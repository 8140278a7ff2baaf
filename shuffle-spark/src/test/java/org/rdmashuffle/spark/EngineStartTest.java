package org.rdmashuffle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.IntStream;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import scala.Tuple2;

/**
 * Where an executor's engine starts: by default on a thread of its own when the executor starts, so
 * no task's thread pays for it (it took the first map task of every executor some hundreds of
 * milliseconds of CPU); with {@code startAtExecutorStart=false}, in the first task that needs it.
 */
class EngineStartTest {
    @TempDir
    Path scratch;

    @Test
    void anExecutorsEngineStartsWithTheExecutor_onAThreadOfItsOwn_beforeAnyShuffle() throws Exception {
        SparkConf conf = SparkClusterSupport.conf("engine start", true, scratch.resolve("eager"));
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            Map<String, String> startedOn = Map.of();
            for (int attempt = 0; attempt < 150; attempt++) { // the start runs beside these probes: up to 30 s
                startedOn = startedOn(sc);
                if (startedOn.size() == 2 && !startedOn.containsValue("none")) {
                    break;
                }
                Thread.sleep(200);
            }
            assertEquals(2, startedOn.size(), "both executors answered: " + startedOn);
            startedOn.forEach((executor, thread) -> assertEquals("rdma-shuffle-start", thread, "executor " + executor));
            // And it is the engine the shuffle uses: every remote block over it -- the software provider here, which
            // each executor's carried-by line names as such and never calls RDMA.
            assertEquals(300, shuffle(sc));
            assertTrue(SparkClusterSupport.fetchCounts(sc)[0] > 0, "blocks over the engine");
            SparkClusterSupport.describeExecutors(sc).forEach(line -> {
                assertTrue(line.matches("\\d+: the software provider \\(RC over TCP in the JVM, not RDMA\\) on soft0 \\(provider "
                        + "software, control [^)]+\\); fetched \\d+ blocks \\(\\d+ bytes\\) over the software provider \\(TCP\\)"
                        + "( from .*)?, 0 over the built-in transport"), line);
                assertFalse(line.replace("not RDMA", "").contains("RDMA"), line);
            });
        }
    }

    @Test
    void withStartAtExecutorStartOff_theFirstTaskThatNeedsItStartsIt() throws Exception {
        SparkConf conf = SparkClusterSupport.conf("engine start in a task", true, scratch.resolve("lazy"))
                .set(RdmaShuffleManager.START_AT_EXECUTOR_START, "false");
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            awaitBothExecutors(sc);
            Map<String, String> before = startedOn(sc);
            assertEquals(Map.of("0", "none", "1", "none"), before, "no engine before a shuffle");
            assertEquals(300, shuffle(sc));
            startedOn(sc).forEach((executor, thread) -> assertTrue(thread.startsWith("Executor task launch worker"),
                    "executor " + executor + ": started on " + thread));
        }
    }

    /** Each executor's answer: the thread that started its engine, or "none". No shuffle of its own. */
    private static Map<String, String> startedOn(JavaSparkContext sc) {
        Map<String, String> seen = new TreeMap<>();
        List<String> answers = sc.parallelize(IntStream.range(0, 40).boxed().toList(), 40).map(i -> {
            String t = RdmaShuffleManager.engineStartedOn();
            return org.apache.spark.SparkEnv.get().executorId() + "=" + (t == null ? "none" : t);
        }).collect();
        for (String a : answers) {
            String[] kv = a.split("=", 2);
            seen.merge(kv[0], kv[1], (x, y) -> x.equals("none") ? y : x);
        }
        return seen;
    }

    private static void awaitBothExecutors(JavaSparkContext sc) throws InterruptedException {
        for (int i = 0; i < 600 && sc.sc().getExecutorIds().size() < 2; i++) {
            Thread.sleep(100);
        }
    }

    /** A small shuffle across both executors; the number of groups. */
    private static long shuffle(JavaSparkContext sc) {
        return sc.parallelize(IntStream.range(0, 30_000).boxed().toList(), 4).mapToPair(i -> new Tuple2<>(i % 300, i))
                .groupByKey(4).count();
    }
}
