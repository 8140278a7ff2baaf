package org.rdmashuffle.benchmarks.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.benchmarks.spark.MainJobRows;
import org.rdmashuffle.benchmarks.spark.ShuffleJob;

/**
 * Decommission with shuffle-block migration on Spark's standalone cluster across three Worker hosts:
 * between the RDMA round's map and reduce stages one Worker is decommissioned (signal PWR, as
 * {@code sbin/decommission-worker.sh} does); its executor moves its map outputs to the executors that
 * stay and exits. The moved outputs' locations then name the receiving executors, and the reducers
 * must get them from those executors' engines, over RDMA: no map runs again.
 */
class WorkerDecommissionAcrossHostsTest {
    private static final long JOB_MINUTES = 10;

    @Test
    void aWorkerDecommissionedBetweenMapsAndReduces_itsOutputsMoveAndComeOverRdmaFromTheirNewExecutors_noMapRunsAgain()
            throws Exception {
        BedSupport.requireBed();
        Path runDir = Files.createTempDirectory(Path.of(System.getProperty("java.io.tmpdir")), "worker-decommission");
        Path go = runDir.resolve("decommissioned");
        String leaving;
        List<String> printed;
        int exit;
        ClusterRun run = ClusterRun.start(3, null, 1, runDir, System.out);
        try (run) {
            List<String> confs = new java.util.ArrayList<>(BedSupport.SPARK_JVMS);
            confs.addAll(List.of("spark.decommission.enabled=true", "spark.storage.decommission.enabled=true",
                    "spark.storage.decommission.shuffleBlocks.enabled=true"));
            Process driver = run.submit(ShuffleJob.class.getName(), confs,
                    // The plugin's shuffle alone: its result is checked against the job's computed without Spark.
                    List.of("--rows", "200000", "--shuffle", "rdma", "--executors", "3", "--pause-rdma-reduce-until", go.toString()),
                    "driver.log");
            driver.getOutputStream().close();
            DriverOutput out = new DriverOutput(driver, System.out, ShuffleJob.PAUSED);
            assertTrue(out.awaitLine(JOB_MINUTES), "the job paused before the RDMA round's reduce stage: " + out.lines());
            ClusterBed.Host worker = run.cluster().workerHosts().getLast();
            leaving = worker.address();
            run.cluster().decommissionWorker(worker, 180);
            Files.createFile(go);
            if (!driver.waitFor(JOB_MINUTES, TimeUnit.MINUTES)) {
                driver.destroyForcibly();
            }
            out.join(30);
            printed = out.lines();
            exit = driver.isAlive() ? -1 : driver.exitValue();
        }
        String text = String.join("\n", printed);
        assertEquals(0, exit, "the driver finished; its log: " + runDir.resolve("logs/driver.log") + "\n" + text);
        MainJobOutput out = MainJobOutput.parseSingle(printed);
        MainJobOutput.Round rdma = out.rounds().getFirst();
        assertEquals("rdma", rdma.shuffle(), text);
        assertEquals(MainJobRows.expectedResult(200_000, 16), rdma.result(), text);
        assertTrue(rdma.executorsLost() >= 1, "the Worker's executor left: " + text);
        assertEquals(0, rdma.stagesRetried(), "no map ran again: every moved output was found where it went: " + text);
        for (MainJobOutput.Executor e : rdma.executors()) {
            assertFalse(e.address().equals(leaving), "nothing ran on the decommissioned Worker afterwards: " + e.line());
        }
        out.assertEveryRemoteBlockOverRdma(2, "software", text); // the two Workers that stayed
        // The leaving executor moved outputs (Spark's log), and the executors that took them served them
        // by RDMA (the engine's log, when a reducer first asked for one it had not written).
        assertTrue(executorLogsContain(runDir, "BlockManagerDecommissioner: Migrated migrate_shuffle_"), "the executor moved its outputs: " + runDir);
        assertTrue(executorLogsContain(runDir, "rdma-shuffle: serving map output"), "a moved output was served by RDMA from "
                + "the executor that took it: " + runDir);
        assertEquals(List.of(), run.leftNamespaces(), "namespaces left behind");
        assertEquals(List.of(), run.leftProcesses(), "processes left behind");
    }

    /** Whether any executor's standard error under the Workers' work dirs has {@code text}. */
    private static boolean executorLogsContain(Path runDir, String text) throws IOException {
        try (Stream<Path> files = Files.walk(runDir)) {
            for (Path f : files.filter(p -> p.getFileName().toString().equals("stderr") && p.toString().contains("/work/"))
                    .toList()) {
                if (Files.readString(f).contains(text)) {
                    return true;
                }
            }
        }
        return false;
    }
}
