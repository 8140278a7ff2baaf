package org.rdmashuffle.benchmarks.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.Test;

/**
 * The accounting behind {@code bin/shuffle-job --hosts N --cpu-by-thread}: /proc's stat lines read
 * right (a thread name with spaces and parentheses), pools' threads grouped, the CPU between two
 * snapshots put where it belongs (a thread born between them from zero, an exited thread's time kept
 * as its process's), and a real process of this machine sampled.
 */
class ThreadCpuSamplerTest {
    @Test
    void aStatLineIsReadPastANameWithSpacesAndParentheses() {
        String stat = "4242 (GC Thread#1 (x)) S 1 4242 4242 0 -1 4194368 100 0 0 0 250 37 0 0 20 0 40 0 12345 0 0";
        assertEquals(287, ThreadCpuSampler.ticksOf(stat));
    }

    @Test
    void aPoolsThreadsAreOneGroup_andGroupsFallIntoCategories() {
        assertEquals("GC Thread", ThreadCpuSampler.group("GC Thread#3"));
        assertEquals("rdma-shuffle-po", ThreadCpuSampler.group("rdma-shuffle-po"));
        assertEquals("shuffle-client", ThreadCpuSampler.group("shuffle-client-4"));
        assertEquals("Executor task l", ThreadCpuSampler.group("Executor task l"));
        assertEquals("task threads", ThreadCpuSampler.category("executor", "Executor task l"));
        assertEquals("GC and safepoints", ThreadCpuSampler.category("executor", "VM Thread"));
        assertEquals("JIT", ThreadCpuSampler.category("driver", "C2 CompilerThre"));
        assertEquals("rdma-shuffle's threads", ThreadCpuSampler.category("executor", "rdma-soft-link-"));
        assertEquals("Spark's block transfer (Netty)", ThreadCpuSampler.category("executor", "shuffle-server"));
        assertEquals("executor", ThreadCpuSampler.processKind("java -cp x org.apache.spark.executor.CoarseGrainedExecutorBackend"));
        assertEquals("Worker", ThreadCpuSampler.processKind("java -cp x org.apache.spark.deploy.worker.Worker spark://m"));
    }

    @Test
    void theCpuBetweenTwoSnapshots_goesToEachThreadsCategory_andAnExitedThreadsToItsProcess() {
        long pid = 7;
        long task = pid << 32 | 8;
        long gc = pid << 32 | 9;
        long born = pid << 32 | 10;
        long exited = pid << 32 | 11;
        Map<Long, ThreadCpuSampler.ThreadKey> threads = Map.of(
                task, new ThreadCpuSampler.ThreadKey(pid, 8, "executor", "Executor task l"),
                gc, new ThreadCpuSampler.ThreadKey(pid, 9, "executor", "GC Thread"),
                born, new ThreadCpuSampler.ThreadKey(pid, 10, "executor", "rdma-shuffle-po"),
                exited, new ThreadCpuSampler.ThreadKey(pid, 11, "executor", "shuffle-client"));
        ThreadCpuSampler.Snapshot first = new ThreadCpuSampler.Snapshot(1_000, 5_000, 20_000, Map.of(pid, 1_000L),
                Map.of(task, 600L, gc, 100L, exited, 50L));
        // 10 s later on 2 CPUs (2,000 ticks): the process used 1,300 ticks, of which the task thread 800,
        // GC 200, the new thread 150, and the thread that exited the other 150; the machine was busy 1,500.
        ThreadCpuSampler.Snapshot last = new ThreadCpuSampler.Snapshot(11_000, 6_500, 22_000, Map.of(pid, 2_300L),
                Map.of(task, 1_400L, gc, 300L, born, 150L));
        Map<String, Double> cpu = ThreadCpuSampler.between(first, last, threads);
        assertEquals(8.0, cpu.get("executor: task threads"), 1e-9, cpu.toString());
        assertEquals(2.0, cpu.get("executor: GC and safepoints"), 1e-9, cpu.toString());
        assertEquals(1.5, cpu.get("executor: rdma-shuffle's threads"), 1e-9, cpu.toString());
        assertEquals(1.5, cpu.get("executor: exited threads"), 1e-9, cpu.toString());
        assertEquals(15.0, cpu.get("machine busy"), 1e-9);
        assertEquals(20.0, cpu.get("machine capacity"), 1e-9);
        assertEquals(2.0, cpu.get("outside the run's processes"), 1e-9);
        assertEquals(10.0, cpu.get("window s"), 1e-9);
    }

    /** For benchmarks/tpcds.sh --cpu-by-thread: two applications' executors apart, each by category; other processes left out. */
    @Test
    void theExecutorsCpu_isSplitByTheirApplication() {
        assertEquals("app-20261203102501-0001", ThreadCpuSampler.applicationOf("java -cp x org.apache.spark.executor."
                + "CoarseGrainedExecutorBackend --driver-url spark://C@10.0.0.1:4 --executor-id 0 --app-id app-20261203102501-0001 --cores 1"));
        assertNull(ThreadCpuSampler.applicationOf("java -cp x org.apache.spark.deploy.worker.Worker spark://m"));
        long rdmaPid = 7;
        long builtinPid = 8;
        long driverPid = 9;
        Map<Long, ThreadCpuSampler.ThreadKey> threads = Map.of(
                rdmaPid << 32 | 1, new ThreadCpuSampler.ThreadKey(rdmaPid, 1, "executor", "Executor task l"),
                rdmaPid << 32 | 2, new ThreadCpuSampler.ThreadKey(rdmaPid, 2, "executor", "rdma-shuffle-ti"),
                rdmaPid << 32 | 3, new ThreadCpuSampler.ThreadKey(rdmaPid, 3, "executor", "ForkJoinPool-1-"),
                builtinPid << 32 | 1, new ThreadCpuSampler.ThreadKey(builtinPid, 1, "executor", "Executor task l"),
                builtinPid << 32 | 2, new ThreadCpuSampler.ThreadKey(builtinPid, 2, "executor", "shuffle-server"),
                driverPid << 32 | 1, new ThreadCpuSampler.ThreadKey(driverPid, 1, "driver", "rdma-shuffle-ti"));
        Map<Long, String> apps = Map.of(rdmaPid, "app-r", builtinPid, "app-b");
        ThreadCpuSampler.Snapshot first = new ThreadCpuSampler.Snapshot(1_000, 0, 0, Map.of(), Map.of(
                rdmaPid << 32 | 1, 100L, rdmaPid << 32 | 2, 10L, builtinPid << 32 | 1, 100L));
        ThreadCpuSampler.Snapshot last = new ThreadCpuSampler.Snapshot(11_000, 0, 0, Map.of(), Map.of(
                rdmaPid << 32 | 1, 500L, rdmaPid << 32 | 2, 30L, rdmaPid << 32 | 3, 5L,
                builtinPid << 32 | 1, 420L, builtinPid << 32 | 2, 12L, driverPid << 32 | 1, 99L));
        Map<String, Map<String, Double>> byApp = ThreadCpuSampler.byApplication(first, last, threads, apps);
        assertEquals(java.util.Set.of("app-r", "app-b"), byApp.keySet(), "the driver is no application's executor");
        assertEquals(4.0, byApp.get("app-r").get("task threads"), 1e-9);
        assertEquals(0.2, byApp.get("app-r").get("rdma-shuffle's threads"), 1e-9);
        assertEquals(0.05, byApp.get("app-r").get("virtual-thread carriers (rdma-shuffle's link and resend threads)"), 1e-9);
        assertEquals(3.2, byApp.get("app-b").get("task threads"), 1e-9);
        assertEquals(0.12, byApp.get("app-b").get("Spark's block transfer (Netty)"), 1e-9);
    }

    @Test
    void aBusyProcessOfTheRunIsSampled_andItsCpuShowsInItsWindow() throws Exception {
        assumeTrue(Files.isDirectory(Path.of("/proc/self/task")), "no /proc here");
        Path runDir = Files.createTempDirectory("cpu-sampler-run");
        // A process whose command line names the run's directory burns CPU for a few seconds, in itself:
        // no child (a child's CPU would be the child's, and its command line does not name the run). Long
        // enough that samples a second apart see it working: one that ends inside the first second is
        // seen at its start only, and what it used after that sample is lost (ThreadCpuSampler says so).
        Process busy = new ProcessBuilder("sh", "-c", "i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done", runDir.toString()).start();
        try (ThreadCpuSampler sampler = ThreadCpuSampler.start(runDir)) {
            long from = System.currentTimeMillis();
            busy.waitFor();
            Thread.sleep(1_200); // one more sample after it ended
            Map<String, Double> cpu = sampler.cpuDuring(from, System.currentTimeMillis());
            double run = cpu.entrySet().stream().filter(e -> e.getKey().startsWith("other: ")).mapToDouble(Map.Entry::getValue).sum();
            assertTrue(run >= 0.5, "the busy process's CPU: " + cpu);
            assertTrue(cpu.get("machine busy") >= run - 0.05, cpu.toString());
        }
    }
}
