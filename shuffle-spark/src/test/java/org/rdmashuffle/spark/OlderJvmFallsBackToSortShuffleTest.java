package org.rdmashuffle.spark;

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
 * A Spark application whose driver and executors run on Java 17 (Debian's OpenJDK 17), given the
 * plugin's classes and settings as the shipped confs give them: it loads {@code RdmaShuffleManager} and
 * {@code RdmaShufflePlugin} (built for Java 17), runs on Spark's own sort shuffle with the right result,
 * and the driver's metrics count both executors as fallen back for {@code RS09 jvm}. The job is
 * compiled here for Java 17 and runs in a JVM of its own on a local cluster of two executor JVMs.
 * Skipped, with the reason, where no JDK 17 is installed (never under CI=true).
 */
class OlderJvmFallsBackToSortShuffleTest {
    static final Path JDK17 = Path.of("/usr/lib/jvm/java-17-openjdk-amd64");

    static final String JOB = """
            import java.util.*;
            import org.apache.spark.*;
            import org.apache.spark.api.java.*;
            import scala.Tuple2;

            public class Job17 {
                public static void main(String[] args) throws Exception {
                    SparkConf conf = new SparkConf().setMaster("local-cluster[2,1,1024]").setAppName("java17")
                            .set("spark.home", args[0]).set("spark.local.dir", args[1])
                            .set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
                            .set("spark.ui.enabled", "false")
                            .set("spark.executor.extraClassPath", System.getProperty("java.class.path"))
                            .set("spark.executorEnv.SPARK_SCALA_VERSION", "2.13")
                            .set("spark.executorEnv.SPARK_LOCAL_IP", "127.0.0.1")
                            .set("spark.executorEnv.JAVA_HOME", System.getProperty("java.home"))
                            .set("spark.shuffle.manager", "org.rdmashuffle.spark.RdmaShuffleManager")
                            .set("spark.plugins", "org.rdmashuffle.spark.RdmaShufflePlugin")
                            .set("spark.shuffle.rdma.provider", "auto");
                    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
                        List<Integer> xs = new ArrayList<>();
                        for (int i = 0; i < 20000; i++) {
                            xs.add(i);
                        }
                        long sum = sc.parallelize(xs, 8).mapToPair(i -> new Tuple2<>(i % 97, (long) i))
                                .reduceByKey(Long::sum, 6).values().reduce(Long::sum);
                        System.out.println("sum=" + sum);
                        System.out.println("manager=" + sc.env().shuffleManager().getClass().getName());
                        var registry = sc.env().metricsSystem()
                                .getSourcesByName("plugin.org.rdmashuffle.spark.RdmaShufflePlugin").head().metricRegistry();
                        long deadline = System.nanoTime() + 60_000_000_000L;
                        Object jvm = null;
                        while (System.nanoTime() < deadline) {
                            jvm = registry.getGauges().get("executors.fallenBack.jvm").getValue();
                            if (Long.valueOf(2L).equals(jvm)) {
                                break;
                            }
                            Thread.sleep(200);
                        }
                        System.out.println("fallenBack.jvm=" + jvm);
                        System.out.println("onRdma=" + registry.getGauges().get("executors.onRdma").getValue());
                    }
                }
            }
            """;

    @Test
    void aJava17DriverAndExecutorsRunTheJobOnSparksSortShuffleAndCountTheReason(@TempDir Path dir) throws Exception {
        boolean ci = "true".equals(System.getenv("CI"));
        if (!Files.isExecutable(JDK17.resolve("bin/java"))) {
            if (ci) {
                throw new IllegalStateException("no JDK 17 at " + JDK17 + ": CI must prove the plugin on an older JVM");
            }
            assumeTrue(false, "no JDK 17 at " + JDK17 + " (apt-get install openjdk-17-jdk-headless)");
        }
        Path src = Files.createDirectories(dir.resolve("src"));
        Files.writeString(src.resolve("Job17.java"), JOB);
        Path classes = Files.createDirectories(dir.resolve("classes"));
        String cp = System.getProperty("java.class.path");
        int rc = ToolProvider.getSystemJavaCompiler().run(null, null, null, "--release", "17", "-cp", cp, "-d",
                classes.toString(), src.resolve("Job17.java").toString());
        assertEquals(0, rc, "the job compiles for Java 17");

        Path home = Files.createDirectories(dir.resolve("spark-home"));
        Files.createDirectories(home.resolve("jars"));
        Files.createFile(home.resolve("RELEASE"));
        Path log = dir.resolve("job.log");
        ProcessBuilder pb = new ProcessBuilder(JDK17.resolve("bin/java").toString(), "-Xmx512m",
                "--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.nio=ALL-UNNAMED",
                "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED", "--add-opens=java.base/java.util=ALL-UNNAMED",
                "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
                "-cp", classes + java.io.File.pathSeparator + cp, "Job17", home.toString(),
                Files.createDirectories(dir.resolve("local")).toString())
                .redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put("JAVA_HOME", JDK17.toString());
        pb.environment().put("SPARK_HOME", home.toString());
        pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
        Process p = pb.start();
        boolean ended = p.waitFor(5, TimeUnit.MINUTES);
        if (!ended) {
            p.destroyForcibly();
        }
        String out = Files.readString(log, StandardCharsets.UTF_8);
        assertTrue(ended, "the Java 17 job ended within 5 minutes:\n" + tail(out));
        assertEquals(0, p.exitValue(), tail(out));
        long expected = 20000L * 19999L / 2;
        List<String> lines = out.lines().toList();
        assertTrue(lines.contains("sum=" + expected), tail(out));
        assertTrue(lines.contains("manager=" + RdmaShuffleManager.class.getName()), tail(out));
        assertTrue(lines.contains("fallenBack.jvm=2"), "both executors counted as fallen back for RS09:\n" + tail(out));
        assertTrue(lines.contains("onRdma=0"), tail(out));
        assertTrue(out.contains("RS09 jvm: saw Java 17"), "the reason is said:\n" + tail(out));
        assertTrue(out.contains("Java " + EngineRuntime.REQUIRED_FEATURE + " or newer"), tail(out));
    }

    private static String tail(String out) {
        List<String> l = out.lines().toList();
        return String.join("\n", l.subList(Math.max(0, l.size() - 60), l.size()));
    }
}
