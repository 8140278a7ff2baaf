package org.rdmashuffle.benchmarks.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
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

    @Test
    void theMainJobOnYarn_bothShufflesGiveOneResult_andRdmaCarriesEveryRemoteBlockBetweenTheNodes() throws Exception {
        BedSupport.requireBed();
        Path run = Files.createDirectories(Repository.root().resolve("benchmarks/target/yarn-runs")
                .resolve(LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + "-spark"));
        HadoopHome hadoop = HadoopHome.create(run.resolve("hadoop-home"), Repository.hadoopJars(), Repository.yarnJar());
        SparkHome spark = SparkHome.create(run.resolve("spark-home"), Repository.pluginJar());
        Path appJar = ClusterRun.appJar(run.resolve("rdma-shuffle-benchmarks-app.jar"));
        List<String> printed = new ArrayList<>();
        int exit;
        Set<String> nodes = new TreeSet<>();
        String prefix;
        try (ClusterBed bed = ClusterBed.start(4, null)) {
            prefix = bed.namespacePrefix();
            try (YarnCluster yarn = YarnCluster.start(bed, hadoop, run)) {
                yarn.nodeHosts().forEach(h -> nodes.add(h.address()));
                // One executor per node: two executor containers (640 MiB + 512 MiB overhead) never fit one node.
                Process driver = yarn.submitSpark(spark, ShuffleJob.class.getName(), appJar,
                        List.of("spark.executor.instances=2", "spark.executor.cores=1", "spark.executor.memory=640m",
                                "spark.executor.memoryOverhead=512m", "spark.yarn.am.memory=256m"),
                        List.of("--rows", "200000", "--compare", "1", "--executors", "2"), "driver.log");
                driver.getOutputStream().close();
                try (BufferedReader out = new BufferedReader(new InputStreamReader(driver.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    Thread pump = Thread.ofVirtual().start(() -> {
                        try {
                            for (String line = out.readLine(); line != null; line = out.readLine()) {
                                synchronized (printed) {
                                    printed.add(line);
                                }
                            }
                        } catch (java.io.IOException ignored) {
                            // the driver is gone; what it printed is kept
                        }
                    });
                    if (!driver.waitFor(JOB_MINUTES, TimeUnit.MINUTES)) {
                        driver.descendants().forEach(ProcessHandle::destroyForcibly);
                        driver.destroyForcibly();
                    }
                    pump.join(TimeUnit.SECONDS.toMillis(30));
                }
                exit = driver.isAlive() ? -1 : driver.exitValue();
            }
        }
        String text;
        synchronized (printed) {
            text = String.join("\n", printed);
        }
        assertEquals(0, exit, "the driver finished; its log: " + run.resolve("logs/driver.log") + "\n" + text);
        MainJobOutput out = MainJobOutput.parse(List.copyOf(printed));
        assertEquals(2, out.rounds().size(), text);
        out.assertOneResultAndEveryRemoteBlockOverRdma(2, "software", text);
        for (MainJobOutput.Round round : out.rounds()) {
            Set<String> executors = new TreeSet<>();
            round.executors().forEach(e -> executors.add(e.address()));
            assertEquals(nodes, executors, "one executor on each NodeManager's host: " + round);
        }
        assertEquals(List.of(), BedSupport.output("ip", "netns", "list").lines().filter(l -> l.startsWith(prefix)).toList(),
                "no namespace left");
        String dir = run.toString();
        assertEquals(List.of(), ProcessHandle.allProcesses().filter(h -> h.pid() != ProcessHandle.current().pid())
                .filter(h -> h.info().commandLine().map(c -> c.contains(dir)).orElse(false)).map(h -> h.pid()).toList(),
                "no daemon or container left");
    }
}
