package org.rdmashuffle.benchmarks.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.benchmarks.spark.MainJobRows;
import org.rdmashuffle.benchmarks.spark.ShuffleJob;

/**
 * The README's main job on Spark on YARN across hosts: {@code spark-submit --master yarn} (client mode,
 * the driver in a host of its own) on the {@link YarnCluster} of Hadoop 3.5's own daemons, Spark's YARN
 * application master and executors in containers of two NodeManagers, the plugin through
 * {@code spark.jars} and conf/spark-defaults.conf as shipped, both shuffles. Executors are sized so that
 * each node runs one: every remote block crosses between the two nodes' addresses.
 *
 * <p>The executors' own engines serve their outputs here (conf/spark-defaults.conf). Spark's external
 * shuffle service on the NodeManagers, which conf/spark-defaults-yarn.conf (service mode, dynamic
 * allocation) needs, is not on these nodes: docs/yarn.md says why.
 */
class MainJobOnYarnAcrossHostsTest {
    private static final long JOB_MINUTES = 10;
    private static final int ROWS = 200_000;

    @Test
    void theMainJobOnYarn_bothShufflesGiveOneResult_andRdmaCarriesEveryRemoteBlockBetweenTheNodes() throws Exception {
        // One executor per node: two executor containers (640 MiB + 512 MiB overhead) never fit one node.
        Job job = run("plain", false, Map.of(), List.of("spark.executor.instances=2"), List.of("--executors", "2"), null);
        MainJobOutput out = MainJobOutput.parse(job.printed());
        assertEquals(2, out.rounds().size(), job.text());
        out.assertOneResultAndEveryRemoteBlockOverRdma(2, "software", job.text());
        for (MainJobOutput.Round round : out.rounds()) {
            Set<String> executors = new TreeSet<>();
            round.executors().forEach(e -> executors.add(e.address()));
            assertEquals(job.nodes(), executors, "one executor on each NodeManager's host: " + round);
        }
    }

    /**
     * conf/spark-defaults-yarn.conf as shipped (service mode, dynamic allocation, Spark's shuffle service)
     * with the NodeManagers' spark_shuffle as conf/yarn-site.xml ships it: the map stage runs, dynamic
     * allocation lets every executor go, and the reduce stage's new executors read the released ones'
     * outputs from the NodeManagers' RDMA services, with no map run again and the job's result. The
     * plugin's shuffle alone (the built-in's release through Spark's service is Spark's to test; the
     * first test runs both shuffles on this bed): its result is the job's, computed without Spark.
     */
    @Test
    void executorsReleasedAfterTheMapStage_theirOutputsComeFromTheNodeManagers_noMapRunsAgain() throws Exception {
        Job job = run("released", true, Map.of(), DYNAMIC_ALLOCATION, List.of("--shuffle", "rdma", "--executors", "2",
                "--release-executors-after-maps"), null);
        MainJobOutput out = MainJobOutput.parseSingle(job.printed());
        assertEquals(1, job.printed().stream().filter(l -> l.equals("every executor released after the map stage")).count(),
                job.text());
        // Every executor of the map stage was gone before the reduce stage asked for a block: what the
        // reducers read over RDMA came from the NodeManagers' services.
        out.assertEveryRemoteBlockOverRdma(2, "software", job.text());
        MainJobOutput.Round rdma = out.rounds().getFirst();
        assertEquals(MainJobRows.expectedResult(ROWS, 16), rdma.result(), job.text());
        assertEquals(0, rdma.stagesRetried(), "no map stage ran again: " + job.text());
    }

    /**
     * As above (service mode, dynamic allocation, every executor released after the map stage), and then,
     * before the reduce stage starts, the NodeManager of the node without the application master is
     * killed, its RDMA and Spark shuffle services with it, and the ResourceManager declares the node lost.
     * The reducers' fetches of that node's outputs fail (RDMA unreachable, then Spark's transport to the
     * dead service): FetchFailed names the node; Spark unregisters its outputs and runs those maps again
     * on the node that is left. The plugin's shuffle alone (the built-in's recovery is Spark's to test):
     * its result is the job's, computed without Spark.
     */
    @Test
    void aNodeManagerKilledBetweenMapsAndReduces_reducersGetFetchFailed_theLostMapsRunAgainOnTheOtherNode() throws Exception {
        Path go = Files.createTempFile("rdma-shuffle-nodemanager-killed", ".go");
        Files.delete(go);
        String[] victim = new String[1];
        try {
            // The ResourceManager declares a silent node lost after 30 s instead of 10 minutes (not less, as a
            // precaution: a live NodeManager's heartbeats can stall for seconds on a loaded 2-core machine).
            Job job = run("nodemanager-killed", true, Map.of("yarn.nm.liveness-monitor.expiry-interval-ms", "30000"),
                    withRetriesOneSecondApart(DYNAMIC_ALLOCATION), List.of("--shuffle", "rdma", "--executors", "2", "--release-executors-after-maps",
                            "--pause-rdma-reduce-until", go.toString()),
                    yarn -> {
                        ClusterBed.Host master = yarn.applicationMasterHost();
                        assertNotNull(master, "the application master runs on one of the nodes");
                        ClusterBed.Host node = yarn.nodeHosts().stream().filter(h -> !h.equals(master)).findFirst().orElseThrow();
                        victim[0] = node.address();
                        yarn.killNodeManager(node, 120);
                        Files.createFile(go);
                    });
            assertNotNull(victim[0], "the job paused before its reduce stage: " + job.text());
            MainJobOutput.Round rdma = MainJobOutput.parseSingle(job.printed()).rounds().getFirst();
            assertEquals("rdma", rdma.shuffle(), job.text());
            assertEquals(MainJobRows.expectedResult(ROWS, 16), rdma.result(), job.text());
            assertTrue(rdma.stagesRetried() > 0, "the lost maps ran again: " + job.text());
            for (MainJobOutput.Executor e : rdma.executors()) {
                assertFalse(e.address().equals(victim[0]), "nothing ran on the lost node after the kill: " + e.line());
            }
            String driverLog = Files.readString(job.logs().resolve("driver.log"));
            assertTrue(driverLog.lines().anyMatch(l -> l.contains("FetchFailed(BlockManagerId(") && l.contains(victim[0])),
                    "a reducer's fetch of the lost node's output failed as FetchFailed naming the node: " + job.logs());
        } finally {
            Files.deleteIfExists(go);
        }
    }

    /**
     * As above (service mode, every executor released after the map stage), and then, before the reduce
     * stage starts, the NodeManager of the node without the application master is killed and started
     * again (a real NodeManager process, with recovery on, as a supervisor restarts a crashed one). The
     * restarted NodeManager's Spark service reads the running application's user and secret back from
     * its recovery path, and the reducers read the outputs written before the crash from its RDMA
     * service: every remote block over RDMA, no map run again, the job's result.
     */
    @Test
    void aNodeManagerRestartedWithRecovery_servesTheOutputsWrittenBeforeItDied_overRdma() throws Exception {
        Path go = Files.createTempFile("rdma-shuffle-nodemanager-restarted", ".go");
        Files.delete(go);
        String[] restarted = new String[1];
        try {
            Job job = run("nodemanager-restarted", true, Map.of("yarn.nodemanager.recovery.enabled", "true",
                            "yarn.nodemanager.recovery.supervised", "true",
                            // Recovery refuses an ephemeral port: the node's containers must find it again.
                            "yarn.nodemanager.address", "${yarn.nodemanager.hostname}:45454"),
                    // Blocks on a reducer's own host through the service too: the bed's stand-in for Spark's service
                    // does not recover executors' local dirs after a restart (Spark's does), so reading them from disk
                    // would fail there, not in anything of ours.
                    withHostLocalReadsThroughTheService(DYNAMIC_ALLOCATION), List.of("--shuffle", "rdma", "--executors", "2",
                            "--release-executors-after-maps", "--pause-rdma-reduce-until", go.toString()),
                    yarn -> {
                        ClusterBed.Host master = yarn.applicationMasterHost();
                        assertNotNull(master, "the application master runs on one of the nodes");
                        ClusterBed.Host node = yarn.nodeHosts().stream().filter(h -> !h.equals(master)).findFirst().orElseThrow();
                        restarted[0] = node.address();
                        yarn.restartNodeManager(node);
                        Files.createFile(go);
                    });
            assertNotNull(restarted[0], "the job paused before its reduce stage: " + job.text());
            MainJobOutput out = MainJobOutput.parseSingle(job.printed());
            MainJobOutput.Round rdma = out.rounds().getFirst();
            assertEquals(MainJobRows.expectedResult(ROWS, 16), rdma.result(), job.text());
            assertEquals(0, rdma.stagesRetried(), "no map ran again: the restarted node served its outputs: " + job.text());
            // Every block from the nodes' services over RDMA (a reducer's own host's too: see above), none over
            // Spark's transport, and some from the restarted node's.
            assertTrue(rdma.remoteBlocks() > 0, job.text());
            for (MainJobOutput.Executor e : rdma.executors()) {
                assertTrue(e.line().contains(", 0 over the built-in transport"), "nothing over Spark's transport: " + e.line());
            }
            assertTrue(rdma.executors().stream().anyMatch(e -> e.line().contains(restarted[0] + " (")),
                    "some blocks came over RDMA from the restarted node " + restarted[0] + ": " + job.text());
            String log = Files.readString(job.logs().resolve("nodemanager-" + restarted[0] + "-restarted.log"));
            assertTrue(log.contains("rdma-shuffle Spark service: serving 1 recovered applications again"),
                    "the restarted NodeManager's Spark service recovered the application: " + job.logs());
        } finally {
            Files.deleteIfExists(go);
        }
    }

    /**
     * Spark's transport retries a fetch from the dead node's service three times before the reducer's
     * FetchFailed, as it would anyway; 1 s apart instead of 5 s (each reduce task waited out 15 s of them,
     * one after the other).
     */
    private static List<String> withRetriesOneSecondApart(List<String> confs) {
        List<String> all = new ArrayList<>(confs);
        all.add("spark.shuffle.io.retryWait=1s");
        return all;
    }

    private static List<String> withHostLocalReadsThroughTheService(List<String> confs) {
        List<String> all = new ArrayList<>(confs);
        all.add("spark.shuffle.readHostLocalDisk=false");
        return all;
    }

    /** Dynamic allocation as a test can watch it: two executors at first, each let go after 3 idle seconds. */
    private static final List<String> DYNAMIC_ALLOCATION = List.of("spark.dynamicAllocation.initialExecutors=2",
            "spark.dynamicAllocation.minExecutors=0", "spark.dynamicAllocation.maxExecutors=2",
            "spark.dynamicAllocation.executorIdleTimeout=3s", "spark.dynamicAllocation.schedulerBacklogTimeout=1s");

    /** What a test does to the cluster while the job waits between its RDMA round's map and reduce stages. */
    private interface Interlude {
        void run(YarnCluster yarn) throws Exception;
    }

    private record Job(List<String> printed, String text, Set<String> nodes, Path logs) {
    }

    /**
     * Runs the main job (both shuffles, one round each; the plugin's alone when {@code jobArgs} has
     * {@code --shuffle}) on a YARN cluster of the bed.
     *
     * @param sparkService whether the NodeManagers run spark_shuffle (with the bed's stand-in for Spark's
     *     jar) and the job uses conf/spark-defaults-yarn.conf; else conf/spark-defaults.conf
     * @param yarnSettings added to every host's yarn-site.xml
     * @param interlude run once the job says it waits between its RDMA round's stages
     *     ({@code --pause-rdma-reduce-until}), or null
     */
    private static Job run(String name, boolean sparkService, Map<String, String> yarnSettings, List<String> confs,
            List<String> jobArgs, Interlude interlude) throws Exception {
        BedSupport.requireBed();
        Path run = Files.createDirectories(Repository.root().resolve("benchmarks/target/yarn-runs")
                .resolve(LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + "-spark-" + name));
        SparkHome spark = SparkHome.create(run.resolve("spark-home"), Repository.pluginJar(),
                sparkService ? "spark-defaults-yarn.conf" : "spark-defaults.conf");
        String service = sparkService ? StandInSparkService.jar(run) + ":" + spark.dir().resolve("jars") + "/*" : null;
        HadoopHome hadoop = HadoopHome.create(run.resolve("hadoop-home"), Repository.hadoopJars(), Repository.yarnJar(), service);
        Path appJar = ClusterRun.appJar(run.resolve("rdma-shuffle-benchmarks-app.jar"));
        // No web UI: in client mode the application master's registration adds YARN's AmIpFilter to the UI
        // while SparkContext is still starting its handlers, and Jetty's handler start can then fail with a
        // ConcurrentModificationException that ends the driver before the job begins (seen in CI and here).
        List<String> sparkConfs = new ArrayList<>(List.of("spark.executor.cores=1", "spark.executor.memory=640m",
                "spark.executor.memoryOverhead=512m", "spark.yarn.am.memory=256m", "spark.ui.enabled=false"));
        sparkConfs.addAll(confs);
        // Both shuffles, once each, unless the test asks for the plugin's alone ("--shuffle", "rdma").
        List<String> args = new ArrayList<>(List.of("--rows", Integer.toString(ROWS)));
        args.addAll(jobArgs.contains("--shuffle") ? List.of() : List.of("--shuffle", "both"));
        args.addAll(jobArgs);
        List<String> printed = new ArrayList<>();
        int exit;
        Set<String> nodes = new TreeSet<>();
        String prefix;
        try (ClusterBed bed = ClusterBed.start(4, null)) {
            prefix = bed.namespacePrefix();
            try (YarnCluster yarn = YarnCluster.start(bed, hadoop, run, yarnSettings)) {
                yarn.nodeHosts().forEach(h -> nodes.add(h.address()));
                Process driver = yarn.submitSpark(spark, ShuffleJob.class.getName(), appJar, sparkConfs, args, "driver.log");
                driver.getOutputStream().close();
                DriverOutput out = new DriverOutput(driver, null, ShuffleJob.PAUSED);
                if (interlude != null && out.awaitLine(JOB_MINUTES) && driver.isAlive()) {
                    interlude.run(yarn);
                }
                if (!driver.waitFor(JOB_MINUTES, TimeUnit.MINUTES)) {
                    driver.descendants().forEach(ProcessHandle::destroyForcibly);
                    driver.destroyForcibly();
                }
                out.join(30);
                printed.addAll(out.lines());
                exit = driver.isAlive() ? -1 : driver.exitValue();
            }
        }
        String text = String.join("\n", printed);
        System.out.println("the driver printed:\n" + text);
        assertEquals(0, exit, "the driver finished; its log: " + run.resolve("logs/driver.log") + "\n" + text
                + whyTheJobEnded(run.resolve("logs")));
        BedSupport.assertNothingLeft(prefix, run);
        return new Job(List.copyOf(printed), text, nodes, run.resolve("logs"));
    }

    /**
     * What the logs say about a job that failed, for the failure message (CI shows the message, not the
     * files): the driver's errors and YARN's diagnostics, and the nodes the ResourceManager declared lost.
     */
    private static String whyTheJobEnded(Path logs) throws IOException {
        StringBuilder why = new StringBuilder("\nwhat the logs say:");
        Pattern driver = Pattern.compile("ERROR|Exception:|diagnostics:|final status|aborted|exited with");
        appendMatching(why, logs.resolve("driver.log"), driver, 25);
        appendMatching(why, logs.resolve("resourcemanager.log"), Pattern.compile("as it is now LOST|Detected pause"), 10);
        return why.toString();
    }

    private static void appendMatching(StringBuilder why, Path log, Pattern pattern, int most) throws IOException {
        if (!Files.exists(log)) {
            why.append("\n  (no ").append(log.getFileName()).append(')');
            return;
        }
        try (var lines = Files.lines(log, StandardCharsets.ISO_8859_1)) {
            lines.filter(l -> pattern.matcher(l).find()).limit(most)
                    .forEach(l -> why.append("\n  ").append(log.getFileName()).append(": ").append(l, 0, Math.min(l.length(), 300)));
        }
    }
}
