package org.rdmashuffle.hadoop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import javax.tools.ToolProvider;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.verbs.EngineRuntime;

/**
 * A NodeManager on Java 17 (Debian's OpenJDK 17), {@link RdmaShuffleService} configured as its
 * {@code mapreduce_shuffle} and {@link RdmaShuffleConsumerPlugin} as the job's shuffle consumer, as the
 * shipped yarn-site.xml and mapred-site.xml say: the NodeManager starts, its service says why its engine
 * cannot run ({@code RS09 jvm}, {@code EngineRunning} 0 in its metrics and {@code rdmashuffle_service_up} 0 with
 * code RS09 in its Prometheus exposition, which runs on Java 17), and a MapReduce job whose tasks
 * run on Java 17 too is shuffled over HTTP by the stock handler with the right result. The cluster
 * (MiniMRYarnCluster) and its driver are compiled here for Java 17 and run in a JVM of their own.
 * Skipped, with the reason, where no JDK 17 is installed (never under CI=true).
 */
class OlderJvmNodeManagerServesOverHttpTest {
    static final Path JDK17 = Path.of("/usr/lib/jvm/java-17-openjdk-amd64");
    static final int LINES = 3000;

    static final String PROGRAM = """
            import java.nio.charset.StandardCharsets;
            import java.nio.file.*;
            import java.util.*;
            import org.apache.hadoop.fs.Path;
            import org.apache.hadoop.io.LongWritable;
            import org.apache.hadoop.io.Text;
            import org.apache.hadoop.mapred.*;
            import org.apache.hadoop.mapred.lib.LongSumReducer;
            import org.apache.hadoop.mapred.lib.TokenCountMapper;
            import org.apache.hadoop.mapreduce.MRJobConfig;
            import org.apache.hadoop.mapreduce.TaskCounter;
            import org.apache.hadoop.mapreduce.v2.MiniMRYarnCluster;
            import org.apache.hadoop.metrics2.impl.MetricsCollectorImpl;
            import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
            import org.apache.hadoop.yarn.conf.YarnConfiguration;

            public class NodeManager17 {
                /** MiniMRYarnCluster sets the stock handler as mapreduce_shuffle whatever it is given: keep ours. */
                static final class Pinned extends YarnConfiguration {
                    boolean pinned;

                    @Override
                    public void set(String name, String value, String source) {
                        if (!(pinned && name.startsWith(NM_AUX_SERVICES))) {
                            super.set(name, value, source);
                        }
                    }
                }

                public static void main(String[] args) throws Exception {
                    java.nio.file.Path work = Paths.get(args[0]);
                    int lines = Integer.parseInt(args[1]);
                    Pinned conf = new Pinned();
                    conf.setStrings(YarnConfiguration.NM_AUX_SERVICES, "mapreduce_shuffle");
                    conf.set(String.format(YarnConfiguration.NM_AUX_SERVICE_FMT, "mapreduce_shuffle"),
                            "org.rdmashuffle.hadoop.RdmaShuffleService");
                    conf.pinned = true;
                    conf.set("rdma.shuffle.service.bindAddress", "127.0.0.1");
                    conf.set("rdma.shuffle.prometheus.port", "0");
                    conf.set("rdma.shuffle.prometheus.bindAddress", "127.0.0.1");
                    conf.set(YarnConfiguration.RM_BIND_HOST, "127.0.0.1");
                    conf.set(YarnConfiguration.NM_BIND_HOST, "127.0.0.1");
                    conf.setInt(YarnConfiguration.NM_PMEM_MB, 4096);
                    conf.setInt(YarnConfiguration.NM_VCORES, 8);
                    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 128);
                    conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
                    conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
                    conf.setLong(YarnConfiguration.RM_NM_HEARTBEAT_INTERVAL_MS, 250);
                    conf.setInt(MRJobConfig.MR_AM_TO_RM_HEARTBEAT_INTERVAL_MS, 250);
                    conf.setInt(org.apache.hadoop.mapreduce.Job.COMPLETION_POLL_INTERVAL_KEY, 250);
                    conf.set("hadoop.tmp.dir", work.resolve("tmp").toString());
                    conf.set(MRJobConfig.MR_AM_STAGING_DIR, work.resolve("staging").toString());
                    MiniMRYarnCluster yarn = new MiniMRYarnCluster("nm17", 1);
                    yarn.init(conf);
                    yarn.start();
                    try {
                        MetricsCollectorImpl collector = new MetricsCollectorImpl();
                        DefaultMetricsSystem.instance().getSource("RdmaShuffleService").getMetrics(collector, true);
                        var record = collector.getRecords().get(0);
                        for (var m : record.metrics()) {
                            System.out.println("metric " + m.name() + "=" + m.value());
                        }
                        for (var t : record.tags()) {
                            System.out.println("tag " + t.name() + "=" + t.value());
                        }
                        // The node's Prometheus exposition, at the port its claim publishes in metrics2.
                        MetricsCollectorImpl claim = new MetricsCollectorImpl();
                        DefaultMetricsSystem.instance().getSource("RdmaShufflePrometheusExporter").getMetrics(claim, true);
                        int port = 0;
                        for (var m : claim.getRecords().get(0).metrics()) {
                            if (m.name().equals("Port")) {
                                port = m.value().intValue();
                            }
                        }
                        String scrape = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(
                                java.net.URI.create("http://127.0.0.1:" + port + "/metrics")).build(),
                                java.net.http.HttpResponse.BodyHandlers.ofString()).body();
                        scrape.lines().filter(l -> !l.startsWith("#")).forEach(l -> System.out.println("prom " + l));

                        java.nio.file.Path in = Files.createDirectories(work.resolve("in"));
                        Map<String, Long> expected = new TreeMap<>();
                        StringBuilder text = new StringBuilder();
                        for (int i = 0; i < lines; i++) {
                            String line = "w" + (i % 97) + " v" + (i % 13) + " u" + i;
                            text.append(line).append('\\n');
                            for (String w : line.split(" ")) {
                                expected.merge(w, 1L, Long::sum);
                            }
                        }
                        Files.writeString(in.resolve("a.txt"), text.toString());
                        Files.writeString(in.resolve("b.txt"), text.toString());
                        expected.replaceAll((w, n) -> 2 * n);

                        JobConf job = new JobConf(yarn.getConfig());
                        job.setJobName("wordcount on Java 17");
                        job.setInt(MRJobConfig.MR_AM_VMEM_MB, 512);
                        job.set(MRJobConfig.MR_AM_COMMAND_OPTS, "-Xmx320m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC");
                        job.setInt(MRJobConfig.MAP_MEMORY_MB, 384);
                        job.setInt(MRJobConfig.REDUCE_MEMORY_MB, 512);
                        job.set(MRJobConfig.MAP_JAVA_OPTS, "-Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC");
                        job.set(MRJobConfig.REDUCE_JAVA_OPTS, "-Xmx384m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC");
                        job.setFloat(MRJobConfig.COMPLETED_MAPS_FOR_REDUCE_SLOWSTART, 1.0f);
                        job.set("mapreduce.job.reduce.shuffle.consumer.plugin.class",
                                "org.rdmashuffle.hadoop.RdmaShuffleConsumerPlugin");
                        job.setMapperClass(TokenCountMapper.class);
                        job.setReducerClass(LongSumReducer.class);
                        job.setOutputKeyClass(Text.class);
                        job.setOutputValueClass(LongWritable.class);
                        job.setNumReduceTasks(2);
                        FileInputFormat.setInputPaths(job, new Path(in.toUri()));
                        java.nio.file.Path out = work.resolve("out");
                        FileOutputFormat.setOutputPath(job, new Path(out.toUri()));
                        RunningJob run = JobClient.runJob(job);
                        System.out.println("job succeeded=" + run.isSuccessful());
                        System.out.println("reduce shuffle bytes=" + run.getCounters().findCounter(TaskCounter.REDUCE_SHUFFLE_BYTES).getValue());
                        Map<String, Long> counted = new TreeMap<>();
                        try (var parts = Files.newDirectoryStream(out, "part-*")) {
                            for (java.nio.file.Path p : parts) {
                                for (String l : Files.readAllLines(p, StandardCharsets.UTF_8)) {
                                    String[] kv = l.split("\\t");
                                    counted.merge(kv[0], Long.parseLong(kv[1]), Long::sum);
                                }
                            }
                        }
                        System.out.println("words=" + counted.size() + " right=" + counted.equals(expected));
                    } finally {
                        yarn.stop();
                    }
                }
            }
            """;

    @Test
    void aJava17NodeManagerWithTheService_startsSaysWhy_andShufflesAMapReduceJobOverHttp(@TempDir Path dir) throws Exception {
        if (!Files.isExecutable(JDK17.resolve("bin/java"))) {
            if ("true".equals(System.getenv("CI"))) {
                throw new IllegalStateException("no JDK 17 at " + JDK17 + ": CI must prove the service on an older JVM");
            }
            assumeTrue(false, "no JDK 17 at " + JDK17 + " (apt-get install openjdk-17-jre-headless)");
        }
        Path src = Files.createDirectories(dir.resolve("src"));
        Files.writeString(src.resolve("NodeManager17.java"), PROGRAM);
        Path classes = Files.createDirectories(dir.resolve("classes"));
        String cp = System.getProperty("java.class.path");
        int rc = ToolProvider.getSystemJavaCompiler().run(null, null, null, "--release", "17", "-cp", cp, "-d",
                classes.toString(), src.resolve("NodeManager17.java").toString());
        assertEquals(0, rc, "the cluster's driver compiles for Java 17");

        Path log = dir.resolve("nm17.log");
        ProcessBuilder pb = new ProcessBuilder(JDK17.resolve("bin/java").toString(), "-Xmx768m",
                "--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.util=ALL-UNNAMED",
                "-cp", classes + java.io.File.pathSeparator + cp, "NodeManager17",
                Files.createDirectories(dir.resolve("work")).toString(), Integer.toString(LINES))
                .directory(dir.toFile()).redirectErrorStream(true).redirectOutput(log.toFile());
        // The NodeManager hands its JAVA_HOME to the containers: the application master and tasks run on 17 too.
        pb.environment().put("JAVA_HOME", JDK17.toString());
        Process p = pb.start();
        boolean ended = p.waitFor(8, TimeUnit.MINUTES);
        if (!ended) {
            p.destroyForcibly();
        }
        String out = Files.readString(log, StandardCharsets.UTF_8);
        assertTrue(ended, "the Java 17 cluster's job ended within 8 minutes:\n" + tail(out));
        assertEquals(0, p.exitValue(), tail(out));
        List<String> lines = out.lines().toList();
        assertTrue(lines.contains("metric EngineRunning=0"), "the service says its engine does not run:\n" + tail(out));
        assertTrue(lines.contains("metric UnavailableCode=9"), "and why, RS09:\n" + tail(out));
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("tag Reason=") && l.contains("RS09 jvm: saw Java 17")
                && l.contains("Java " + EngineRuntime.REQUIRED_FEATURE + " or newer")), tail(out));
        assertTrue(out.contains("map outputs are served over HTTP only"), "one WARN says what still serves:\n" + tail(out));
        // The Prometheus exposition is built for Java 17 too: it says so to Prometheus, with the RS code.
        assertTrue(lines.stream().anyMatch(l -> l.matches("prom rdmashuffle_service_up\\{.*service=\"mapreduce\".*\\} 0(\\.0)?")),
                "rdmashuffle_service_up 0 in the exposition:\n" + tail(out));
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("prom rdmashuffle_service_unavailable_info{") && l.contains("code=\"RS09\"")
                && l.contains("reason=\"jvm\"") && l.contains("service=\"mapreduce\"")), "RS09 in the exposition:\n" + tail(out));
        assertTrue(lines.contains("job succeeded=true"), tail(out));
        assertTrue(lines.stream().anyMatch(l -> l.matches("reduce shuffle bytes=[1-9]\\d*")),
                "the reducers fetched the map outputs from the NodeManager:\n" + tail(out));
        assertTrue(lines.contains("words=" + (97 + 13 + LINES) + " right=true"), tail(out));
    }

    private static String tail(String out) {
        List<String> l = out.lines().toList();
        return String.join("\n", l.subList(Math.max(0, l.size() - 80), l.size()));
    }
}
