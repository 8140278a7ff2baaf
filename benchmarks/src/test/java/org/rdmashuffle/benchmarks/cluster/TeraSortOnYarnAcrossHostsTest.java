package org.rdmashuffle.benchmarks.cluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * Hadoop's own TeraGen, TeraSort and TeraValidate on a YARN cluster across hosts of the bed: a
 * ResourceManager and two NodeManagers, each a JVM of Hadoop 3.5's jars with Hadoop's own Netty 4.1
 * ({@link HadoopHome}), the project's {@code -yarn} jar loaded as conf/yarn-site.xml ships it and
 * conf/mapred-site.xml merged into the cluster's MapReduce settings (docs/yarn.md's steps, install
 * paths substituted). The software provider carries the engine's protocol over TCP (the bed has no RDMA device).
 *
 * <p>Checked: each NodeManager says its RDMA service serves; TeraSort over the RDMA consumer and over
 * the stock shuffle (same input, two reduces) write the same bytes, and TeraValidate finds the RDMA
 * run's output sorted; the job's counters say every shuffled map output and byte came over the software
 * provider (and none is counted as RDMA); each
 * node ran maps and a reduce (so every reduce read another host's outputs), and each reduce's engine
 * was on its own host's address.
 */
class TeraSortOnYarnAcrossHostsTest {
    private static final int ROWS = 200_000; // 100 bytes each: 20 MB in four files
    private static final long JOB_MINUTES = 8;

    @Test
    void teraSortThroughTheNodeManagersRdmaService_validates_andWritesWhatTheStockShuffleWrites() throws Exception {
        onYarn("", Map.of(), (yarn, run, data) -> {
            for (ClusterBed.Host node : yarn.nodeHosts()) {
                String log = Files.readString(yarn.logs().resolve("nodemanager-" + node.address() + ".log"));
                assertTrue(log.contains("rdma-shuffle service: map outputs carried by the software provider"),
                        "the NodeManager at " + node.address() + " loaded the RDMA service from the -yarn jar");
            }
            job(yarn, "teragen", "-Dmapreduce.job.maps=4", Integer.toString(ROWS), data.resolve("in").toString());
            String rdma = job(yarn, "terasort-rdma", "-Dmapreduce.job.reduces=2",
                    "-Dmapreduce.job.reduce.slowstart.completedmaps=1.0",
                    data.resolve("in").toString(), data.resolve("out-rdma").toString());
            // Before the next jobs: TeraValidate's shuffle goes over the same services.
            assertTheNodeManagersPublishWhatTheyServed(yarn, counter(rdma, "MAP_OUTPUTS_OVER_SOFTWARE_PROVIDER"),
                    counter(rdma, "BYTES_OVER_SOFTWARE_PROVIDER"));
            String stock = job(yarn, "terasort-stock", "-Dmapreduce.job.reduces=2",
                    "-Dmapreduce.job.reduce.slowstart.completedmaps=1.0",
                    "-Dmapreduce.job.reduce.shuffle.consumer.plugin.class=org.apache.hadoop.mapreduce.task.reduce.Shuffle",
                    data.resolve("in").toString(), data.resolve("out-stock").toString());
            assertValidates(yarn, data.resolve("out-rdma"), data.resolve("report"));
            for (String part : List.of("part-r-00000", "part-r-00001")) {
                assertArrayEquals(Files.readAllBytes(data.resolve("out-stock").resolve(part)),
                        Files.readAllBytes(data.resolve("out-rdma").resolve(part)), part + " as the stock shuffle wrote it");
            }

            assertFalse(stock.contains("OVER_RDMA") || stock.contains("OVER_SOFTWARE_PROVIDER"), "the stock run shuffled over HTTP only");
            long shuffled = counter(rdma, "Shuffled Maps");
            long shuffleBytes = counter(rdma, "Reduce shuffle bytes");
            assertEquals(4 * 2, shuffled, "four maps' outputs for each of two reduces");
            // The client prints our counters by their enum names: it has no rdma-shuffle jar, so no display names.
            assertEquals(shuffled, counter(rdma, "MAP_OUTPUTS_OVER_SOFTWARE_PROVIDER"), "every map output over the software provider");
            assertTrue(shuffleBytes > ROWS * 100L / 2, "the reduces shuffled the data: " + shuffleBytes);
            assertEquals(shuffleBytes, counter(rdma, "BYTES_OVER_SOFTWARE_PROVIDER"), "every shuffled byte over the software provider");
            assertFalse(Pattern.compile("OVER_RDMA=[1-9]").matcher(rdma).find(), "nothing counted as RDMA on the software provider");

            String app = application(rdma);
            for (ClusterBed.Host node : yarn.nodeHosts()) {
                List<String> tasks = tasksRun(yarn.containerLogs(node).resolve(app));
                assertTrue(tasks.stream().anyMatch(t -> t.contains("_m_")), node.address() + " ran a map: " + tasks);
                assertTrue(tasks.stream().anyMatch(t -> t.contains("_r_")), node.address() + " ran a reduce: " + tasks);
                assertTrue(containerText(yarn.containerLogs(node).resolve(app), "stderr").contains(
                        "fetches with the engine: the software provider (RC over TCP in the JVM, not RDMA) on soft0 (provider software, "
                                + "control " + node.address() + ")"),
                        "the reduce on " + node.address() + " fetched with an engine on its host's address");
            }
        });
    }

    /**
     * Every NodeManager's RDMA service told to listen on an address its host does not have ({@code
     * rdma.shuffle.service.bindAddress}, a documentation address), as a typo in yarn-site.xml would: the
     * engines cannot start, the NodeManagers start and stay up, each service says once in its log why
     * and its JMX bean says {@code EngineRunning} 0; TeraSort through the RDMA consumer (fallback on, as
     * shipped) finds no service at the nodes' RDMA port and is shuffled by the stock HTTP handlers,
     * nothing over RDMA, and TeraValidate finds its output sorted.
     */
    @Test
    void anRdmaServiceThatCannotListen_leavesEveryNodeManagerUp_andTeraSortShufflesOverHttp() throws Exception {
        onYarn("-cannot-listen", Map.of("rdma.shuffle.service.bindAddress", "192.0.2.1"), (yarn, run, data) -> {
            job(yarn, "teragen", "-Dmapreduce.job.maps=2", Integer.toString(ROWS / 4), data.resolve("in").toString());
            String sorted = job(yarn, "terasort-rdma", "-Dmapreduce.job.reduces=2",
                    "-Dmapreduce.job.reduce.slowstart.completedmaps=1.0",
                    data.resolve("in").toString(), data.resolve("out").toString());
            assertValidates(yarn, data.resolve("out"), data.resolve("report"));
            assertTrue(counter(sorted, "Reduce shuffle bytes") > 0, "the reduces shuffled the data over HTTP");
            // The consumer's counters are printed, at 0, when its fetchers ran and fell back to HTTP.
            assertFalse(Pattern.compile("OVER_(RDMA|SOFTWARE_PROVIDER)=[1-9]").matcher(sorted).find(), "nothing came over the engine: " + sorted);
            for (ClusterBed.Host node : yarn.nodeHosts()) {
                String log = Files.readString(yarn.logs().resolve("nodemanager-" + node.address() + ".log"));
                assertTrue(log.contains("rdma-shuffle service (mapreduce_shuffle): no RDMA on this node, map outputs are "
                        + "served over HTTP only") && log.contains("192.0.2.1"),
                        "the NodeManager at " + node.address() + " said why, naming the address: " + yarn.logs());
                String bean = yarn.httpGet(YarnCluster.nodeManagerWeb(node) + BEAN);
                assertEquals(0, jmx(bean, "EngineRunning"), node.address() + ": " + bean);
                assertTrue(bean.contains("\"tag.Reason\"") && bean.contains("192.0.2.1"), node.address() + ": " + bean);
            }
        });
    }

    /**
     * A NodeManager process killed and started again with recovery on, after TeraSort's maps wrote their
     * outputs and before its reduces fetch them (each reduce's shuffle waits in a consumer that pauses,
     * {@link #PAUSING_CONSUMER}, then is the RDMA consumer): the restarted NodeManager's service gets the
     * job's secret back from the stock handler's state store and finds the outputs on disk, and every
     * map output and byte the reduces shuffled, the restarted node's included, comes over the engine (the software provider here).
     */
    @Test
    void aNodeManagerRestartedWithRecovery_servesTheMapOutputsWrittenBeforeItDied_overRdma() throws Exception {
        onYarn("-nm-restarted", Map.of("yarn.nodemanager.recovery.enabled", "true",
                "yarn.nodemanager.recovery.supervised", "true",
                // Recovery refuses an ephemeral port: the node's containers must find it again.
                "yarn.nodemanager.address", "${yarn.nodemanager.hostname}:45454"), (yarn, run, data) -> {
            Path pause = Files.createDirectories(run.resolve("pause"));
            Path consumerJar = pausingConsumerJar(run);
            job(yarn, "teragen", "-Dmapreduce.job.maps=4", Integer.toString(ROWS / 2), data.resolve("in").toString());
            java.util.concurrent.CompletableFuture<String> sort = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    // On the tasks' class path beside the -yarn jar (every host sees this file system): -libjars
                    // does not ship a file: jar when the local file system is not cached (core-site here).
                    return job(yarn, "terasort-rdma", "-Dmapreduce.application.classpath="
                                    + mapredSetting(yarn, "mapreduce.application.classpath") + "," + consumerJar,
                            "-Dmapreduce.job.reduce.shuffle.consumer.plugin.class=rdmashuffletest.PausingConsumer",
                            "-Drdmashuffle.test.pauseDir=" + pause, "-Dmapreduce.job.reduces=2",
                            "-Dmapreduce.job.reduce.slowstart.completedmaps=1.0",
                            data.resolve("in").toString(), data.resolve("out").toString());
                } catch (IOException | InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MINUTES.toNanos(JOB_MINUTES);
            while (paused(pause) < 2 && !sort.isDone() && System.nanoTime() < deadline) {
                Thread.sleep(250);
            }
            assertTrue(paused(pause) >= 2, "both reduces waiting before their shuffle (every map done): " + yarn.logs());
            ClusterBed.Host master = yarn.applicationMasterHost();
            ClusterBed.Host victim = yarn.nodeHosts().stream().filter(h -> !h.equals(master)).findFirst().orElseThrow();
            yarn.restartNodeManager(victim);
            Files.createFile(pause.resolve("go"));
            String sorted = sort.get(JOB_MINUTES, java.util.concurrent.TimeUnit.MINUTES);

            assertValidates(yarn, data.resolve("out"), data.resolve("report"));
            long shuffled = counter(sorted, "Shuffled Maps");
            assertEquals(4 * 2, shuffled, "four maps' outputs for each of two reduces");
            assertEquals(shuffled, counter(sorted, "MAP_OUTPUTS_OVER_SOFTWARE_PROVIDER"), "every map output over the software provider");
            assertEquals(counter(sorted, "Reduce shuffle bytes"), counter(sorted, "BYTES_OVER_SOFTWARE_PROVIDER"),
                    "every byte over the software provider");
            List<String> tasks = tasksRun(yarn.containerLogs(victim).resolve(application(sorted)));
            assertTrue(tasks.stream().anyMatch(t -> t.contains("_m_")),
                    "the restarted node " + victim.address() + " held map outputs: " + tasks);
            String restarted = Files.readString(yarn.logs().resolve("nodemanager-" + victim.address() + "-restarted.log"));
            assertTrue(restarted.contains("rdma-shuffle service: map outputs carried by the software provider"),
                    "the restarted NodeManager's RDMA service started: " + yarn.logs());
        });
    }

    /** What a test does on a YARN cluster of the bed: its files under {@code run}, job data under {@code data}. */
    private interface OnYarn {
        void run(YarnCluster yarn, Path run, Path data) throws Exception;
    }

    /**
     * Runs {@code test} on a YARN cluster of the bed (a ResourceManager, two NodeManagers, a client host)
     * with {@code yarnSettings} in every host's yarn-site.xml, its files in a run directory named by the
     * time and {@code runName}; then checks that the bed left nothing behind.
     */
    private static void onYarn(String runName, Map<String, String> yarnSettings, OnYarn test) throws Exception {
        BedSupport.requireBed();
        Path run = Files.createDirectories(Repository.root().resolve("benchmarks/target/yarn-runs")
                .resolve(LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + runName));
        HadoopHome home = HadoopHome.create(run.resolve("hadoop-home"), Repository.hadoopJars(), Repository.yarnJar());
        String prefix;
        try (ClusterBed bed = ClusterBed.start(4, null)) {
            prefix = bed.namespacePrefix();
            try (YarnCluster yarn = YarnCluster.start(bed, home, run, yarnSettings)) {
                test.run(yarn, run, run.resolve("data"));
            }
        }
        BedSupport.assertNothingLeft(prefix, run);
    }

    /** TeraValidate on {@code sorted}: it wrote its checksum to {@code report} and found nothing out of order. */
    private static void assertValidates(YarnCluster yarn, Path sorted, Path report) throws Exception {
        job(yarn, "teravalidate", sorted.toString(), report.toString());
        String found = Files.readString(report.resolve("part-r-00000"));
        assertTrue(found.contains("checksum"), "TeraValidate wrote its checksum: " + found);
        assertFalse(found.contains("error") || found.contains("misorder"), "TeraValidate found: " + found);
    }

    /**
     * A shuffle consumer that, before it is the RDMA consumer, says it waits (a file {@code
     * paused-<reduce>} in the job's {@code rdmashuffle.test.pauseDir}) and waits for {@code go} there (at
     * most 5 minutes). Compiled here against the -yarn jar and Hadoop's jars, put on the tasks' class path.
     */
    static final String PAUSING_CONSUMER = """
            package rdmashuffletest;

            import java.nio.file.Files;
            import java.nio.file.Path;
            import java.nio.file.Paths;

            public class PausingConsumer<K, V> extends org.rdmashuffle.hadoop.RdmaShuffleConsumerPlugin<K, V> {
                @Override
                public void init(Context<K, V> context) {
                    Path dir = Paths.get(context.getJobConf().get("rdmashuffle.test.pauseDir"));
                    try {
                        Files.writeString(dir.resolve("paused-" + context.getReduceId()), "");
                        long deadline = System.nanoTime() + 300_000_000_000L;
                        while (!Files.exists(dir.resolve("go"))) {
                            if (System.nanoTime() > deadline) {
                                throw new IllegalStateException("no go in " + dir + " within 5 minutes");
                            }
                            Thread.sleep(200);
                        }
                    } catch (java.io.IOException | InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                    super.init(context);
                }
            }
            """;

    private static Path pausingConsumerJar(Path run) throws IOException {
        Path src = Files.createDirectories(run.resolve("pausing-consumer/src/rdmashuffletest"));
        Files.writeString(src.resolve("PausingConsumer.java"), PAUSING_CONSUMER);
        Path classes = Files.createDirectories(run.resolve("pausing-consumer/classes"));
        StringBuilder cp = new StringBuilder(Repository.yarnJar().toString());
        try (Stream<Path> jars = Files.list(Repository.hadoopJars())) {
            jars.forEach(j -> cp.append(java.io.File.pathSeparator).append(j));
        }
        int rc = javax.tools.ToolProvider.getSystemJavaCompiler().run(null, null, null, "-cp", cp.toString(), "-d",
                classes.toString(), src.resolve("PausingConsumer.java").toString());
        assertEquals(0, rc, "the pausing consumer compiles against the -yarn jar");
        Path jar = run.resolve("pausing-consumer.jar");
        try (java.util.jar.JarOutputStream out = new java.util.jar.JarOutputStream(Files.newOutputStream(jar));
             Stream<Path> files = Files.list(classes.resolve("rdmashuffletest"))) {
            for (Path f : files.sorted().toList()) {
                out.putNextEntry(new java.util.jar.JarEntry("rdmashuffletest/" + f.getFileName()));
                Files.copy(f, out);
                out.closeEntry();
            }
        }
        return jar;
    }

    private static long paused(Path pause) throws IOException {
        try (Stream<Path> files = Files.list(pause)) {
            return files.filter(f -> f.getFileName().toString().startsWith("paused-")).count();
        }
    }

    /** A setting of the client host's mapred-site.xml, as the cluster wrote it. */
    private static String mapredSetting(YarnCluster yarn, String name) throws IOException {
        String xml = Files.readString(yarn.hostDir(yarn.clientHost()).resolve("etc/hadoop/mapred-site.xml"));
        Matcher m = Pattern.compile("<name>" + Pattern.quote(name) + "</name>\\s*<value>([^<]*)</value>").matcher(xml);
        assertTrue(m.find(), "the cluster's mapred-site.xml sets " + name);
        return m.group(1);
    }

    private static final String BEAN = "/jmx?qry=Hadoop:service=NodeManager,name=RdmaShuffleService";

    /**
     * Issue 36 on the YARN bed: each NodeManager's JMX servlet, read over HTTP from the client's host,
     * shows what its RDMA service served: the two nodes' blocks and bytes add up to the map outputs and
     * bytes the job's counters say came over the engine, nothing refused, no failed completion; and its /prom
     * servlet serves the same figures under the names conf/grafana's dashboard queries. JMX caches a
     * source's figures for the metrics period (10 s): read until they settle, at most 40 s.
     */
    private static void assertTheNodeManagersPublishWhatTheyServed(YarnCluster yarn, long shuffled, long shuffleBytes)
            throws IOException, InterruptedException {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(40);
        long[] sum;
        List<String> beans = new ArrayList<>();
        do {
            sum = new long[4];
            beans.clear();
            for (ClusterBed.Host node : yarn.nodeHosts()) {
                String bean = yarn.httpGet(YarnCluster.nodeManagerWeb(node) + BEAN);
                beans.add(node.address() + ": " + bean.replaceAll("\\s+", " "));
                sum[0] += jmx(bean, "ServedBlocks");
                sum[1] += jmx(bean, "ServedBytes");
                sum[2] += jmx(bean, "RefusedRequests");
                sum[3] += jmx(bean, "CompletionErrors");
            }
            if (sum[0] == shuffled && sum[1] == shuffleBytes) {
                break;
            }
            Thread.sleep(2000);
        } while (System.nanoTime() < deadline);
        assertEquals(shuffled, sum[0], "blocks the NodeManagers served, by JMX, against the job's shuffled maps: " + beans);
        assertEquals(shuffleBytes, sum[1], "bytes the NodeManagers served, by JMX, against the job's shuffle bytes: " + beans);
        assertEquals(0, sum[2], "refused requests: " + beans);
        assertEquals(0, sum[3], "failed completions: " + beans);
        for (ClusterBed.Host node : yarn.nodeHosts()) {
            String prom = yarn.httpGet(YarnCluster.nodeManagerWeb(node) + "/prom");
            for (String name : List.of("rdma_shuffle_service_served_bytes", "rdma_shuffle_service_served_blocks",
                    "rdma_shuffle_service_refused_requests", "rdma_shuffle_service_registered_map_output_bytes")) {
                assertTrue(Pattern.compile("(?m)^" + name + "\\{").matcher(prom).find(),
                        node.address() + "'s /prom serves " + name + ": " + prom.lines().filter(l -> l.startsWith("rdma"))
                                .toList());
            }
        }
    }

    /** A metric of the node's record (record 0: its attributes carry no ".N" suffix) in a JMX servlet's JSON. */
    private static long jmx(String bean, String name) {
        Matcher m = Pattern.compile("\"" + name + "\"\\s*:\\s*(\\d+)").matcher(bean);
        assertTrue(m.find(), "the bean has " + name + ": " + bean);
        return Long.parseLong(m.group(1));
    }

    /** Runs an example program to its end; its log, which must say it succeeded. */
    private static String job(YarnCluster yarn, String name, String... args) throws IOException, InterruptedException {
        List<String> programAndArgs = new ArrayList<>(List.of(name.replaceFirst("-.*", "")));
        programAndArgs.addAll(List.of(args));
        int status = yarn.runExample(name + ".log", JOB_MINUTES, programAndArgs);
        String log = Files.readString(yarn.logs().resolve(name + ".log"));
        assertEquals(0, status, name + " exited with " + status + "; its log: " + yarn.logs().resolve(name + ".log"));
        assertTrue(log.contains("completed successfully"), name + " completed; its log: " + yarn.logs().resolve(name + ".log"));
        return log;
    }

    private static long counter(String log, String name) {
        Matcher m = Pattern.compile("\\s" + Pattern.quote(name) + "\\s*=(\\d+)").matcher(log);
        assertTrue(m.find(), "the job printed counter '" + name + "'");
        return Long.parseLong(m.group(1));
    }

    private static String application(String log) {
        Matcher m = Pattern.compile("Submitted application (application_\\d+_\\d+)").matcher(log);
        assertTrue(m.find(), "the client printed its application id");
        return m.group(1);
    }

    /**
     * The task attempts that ran in containers whose logs are under {@code appLogs}: each task's syslog
     * says "Task:ATTEMPT is done" (the application master's names every attempt, but not that way).
     */
    private static List<String> tasksRun(Path appLogs) {
        Matcher m = Pattern.compile("Task:(attempt_\\d+_\\d+_[mr]_\\d+_\\d+) is done").matcher(containerText(appLogs, "syslog"));
        List<String> tasks = new ArrayList<>();
        while (m.find()) {
            if (!tasks.contains(m.group(1))) {
                tasks.add(m.group(1));
            }
        }
        return tasks;
    }

    private static String containerText(Path appLogs, String file) {
        if (!Files.isDirectory(appLogs)) {
            return "";
        }
        try (Stream<Path> files = Files.walk(appLogs)) {
            StringBuilder text = new StringBuilder();
            for (Path f : files.filter(p -> p.getFileName().toString().equals(file)).toList()) {
                text.append(Files.readString(f));
            }
            return text.toString();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
