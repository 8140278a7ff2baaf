package org.rdmashuffle.benchmarks.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.benchmarks.spark.MainJobRows;
import org.rdmashuffle.benchmarks.spark.ShuffleJob;

/**
 * Dynamic allocation as Kubernetes runs it (conf/kubernetes/spark-defaults-k8s.conf): no external shuffle
 * service, executors serve their own outputs, and shuffle tracking decides which executors may go. On
 * Spark's standalone cluster across three Worker hosts (one single-core executor each), two map tasks
 * write the shuffle on two of the executors; after the map stage the job waits past the idle timeout
 * with nothing running. Shuffle tracking must keep the executors holding outputs and let the third go;
 * the reducers then read each other's outputs from the kept executors' engines over RDMA, with no map
 * run again, and the result is the job's (computed without Spark: {@link MainJobRows#expectedResult}). The plugin's map outputs are Spark's own {@code MapStatus}es, so tracking sees them as
 * it sees the built-in shuffle's.
 */
class ShuffleTrackingAcrossHostsTest {
    private static final long JOB_MINUTES = 10;
    private static final int ROWS = 200_000;
    private static final int MAPS = 2;
    private static final int IDLE_TIMEOUT_SECONDS = 8;
    private static final int HOLD_SECONDS = 20;
    private static final Pattern HELD = Pattern.compile(Pattern.quote(ShuffleJob.HELD)
            + "\\d+ s; executors alive (\\[.*?\\]); map outputs on (\\[.*?\\]); released during the hold (\\d+)$");

    @Test
    void shuffleTrackingWithoutAShuffleService_keepsTheExecutorHoldingOutputs_releasesTheRest_andTheReduceReadsItOverRdma()
            throws Exception {
        BedSupport.requireBed();
        Path runDir = Files.createTempDirectory(Path.of(System.getProperty("java.io.tmpdir")), "shuffle-tracking");
        ClusterRun run = ClusterRun.start(3, null, 1, runDir, System.out);
        ClusterRun.Finished driver;
        try (run) {
            List<String> confs = new java.util.ArrayList<>(BedSupport.SPARK_JVMS);
            confs.addAll(List.of("spark.dynamicAllocation.enabled=true",
                    "spark.dynamicAllocation.shuffleTracking.enabled=true", "spark.shuffle.service.enabled=false",
                    "spark.dynamicAllocation.initialExecutors=3", "spark.dynamicAllocation.minExecutors=0",
                    "spark.dynamicAllocation.maxExecutors=3", "spark.dynamicAllocation.executorIdleTimeout=" + IDLE_TIMEOUT_SECONDS + "s",
                    "spark.dynamicAllocation.schedulerBacklogTimeout=1s"));
            driver = run.runMainJob(confs,
                    // Two maps on three executors: one holds none. The idle timeout must outlast the warm-up's skew
                    // (an executor idle from its warm-up task until the map stage starts: at 2 s a loaded bed let
                    // two go before the maps, and both maps ran on the one left); the hold outlasts the timeout with
                    // room for the removal. The plugin's shuffle alone: its result is checked against the job's
                    // computed without Spark.
                    List.of("--rows", Integer.toString(ROWS), "--maps", Integer.toString(MAPS), "--reducers", "12",
                            "--shuffle", "rdma", "--executors", "3", "--hold-after-maps", Integer.toString(HOLD_SECONDS)),
                    JOB_MINUTES, System.out);
        }
        List<String> printed = driver.lines();
        assertEquals(List.of(), run.leftNamespaces(), "namespaces left behind");
        assertEquals(List.of(), run.leftProcesses(), "processes left behind");
        String text = driver.text();
        assertEquals(0, driver.exit(), "the driver finished; its log: " + runDir.resolve("logs/driver.log") + "\n" + text);
        List<Matcher> holds = printed.stream().map(HELD::matcher).filter(Matcher::find).toList();
        assertEquals(1, holds.size(), "one hold: " + text);
        for (Matcher held : holds) {
            assertEquals(MAPS, held.group(2).split(",").length, "the map tasks ran on " + MAPS
                    + " executors (all three alive when the map stage started), else no block crosses hosts: " + held.group());
            assertEquals(held.group(2), held.group(1), "after the idle timeout the executors left are those holding outputs: "
                    + held.group());
            assertTrue(Integer.parseInt(held.group(3)) >= 1, "an executor without outputs was let go: " + held.group());
        }
        MainJobOutput job = MainJobOutput.parseSingle(printed);
        assertEquals(MainJobRows.expectedResult(ROWS, MAPS), job.rounds().getFirst().result(), text);
        assertEquals(0, job.rounds().getFirst().stagesRetried(), "no map ran again: " + text);
        job.assertEveryRemoteBlockOverRdma(-1, "software", text);
    }
}
