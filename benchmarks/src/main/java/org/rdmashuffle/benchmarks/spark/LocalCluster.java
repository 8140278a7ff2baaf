package org.rdmashuffle.benchmarks.spark;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.apache.spark.SparkConf;
import org.rdmashuffle.spark.RdmaShuffleManager;

/**
 * The Spark configuration every benchmark job runs with: local-cluster mode (separate executor JVMs,
 * started from this JVM's classpath), everything on 127.0.0.1, Kryo, and either Spark's built-in
 * shuffle or rdma-shuffle on its default provider. {@code SPARK_HOME} must name a directory; it is
 * made into an empty Spark home if it is not one. A job started by {@code spark-submit} (on the
 * cluster bed) takes its master and settings from there instead ({@link #submittedConf}).
 */
public final class LocalCluster {
    /** System property: the master (default local-cluster[2,1,1024]). */
    public static final String MASTER = "rdmashuffle.master";
    /** System property: extra executor JVM options; by default the driver's own module options are passed on. */
    public static final String EXECUTOR_OPTIONS = "rdmashuffle.executorJavaOptions";

    private LocalCluster() {
    }

    /**
     * The JVM options spark-submit would give executors on Java 17+ (module opens and the like): this
     * driver's own, which its launcher set.
     */
    static String executorOptions() {
        String given = System.getProperty(EXECUTOR_OPTIONS);
        if (given != null) {
            return given;
        }
        return String.join(" ", java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                .filter(a -> a.startsWith("--add-opens") || a.startsWith("--sun-misc") || a.startsWith("-XX:+IgnoreUnrecognized")
                        || a.startsWith("-Djdk.reflect") || a.startsWith("-Dio.netty"))
                .toList());
    }

    /** Whether this JVM is a driver started by {@code spark-submit}, which passes its settings as system properties. */
    public static boolean submitted() {
        return System.getProperty("spark.master") != null;
    }

    /**
     * The configuration {@code spark-submit} gave this driver (its spark-defaults.conf, {@code --master},
     * {@code --conf}s), with the shuffle chosen: {@code rdma} is the plugin, {@code builtin} Spark's own
     * sort shuffle whatever the defaults say; both ship the same jars and use the same serializer.
     */
    public static SparkConf submittedConf(String appName, String shuffle) {
        SparkConf conf = new SparkConf().setAppName(appName + " (" + shuffle + ")")
                .setIfMissing("spark.serializer", "org.apache.spark.serializer.KryoSerializer");
        switch (shuffle) {
            case "rdma" -> conf.set("spark.shuffle.manager", RdmaShuffleManager.class.getName());
            // A second application on the built-in shuffle: the control a side-by-side comparison is checked against.
            case "builtin", "builtin-control" -> conf.set("spark.shuffle.manager", "sort");
            default -> throw new IllegalArgumentException("shuffle rdma, builtin or builtin-control, not " + shuffle);
        }
        return conf;
    }

    /** Waits (at most 120 s) until {@code count} executors have registered, so no run is timed on fewer. */
    public static void awaitExecutors(org.apache.spark.api.java.JavaSparkContext sc, int count) throws InterruptedException {
        awaitExecutors(sc, count, 120);
    }

    /** Waits (at most {@code seconds}) until {@code count} executors have registered. */
    public static void awaitExecutors(org.apache.spark.api.java.JavaSparkContext sc, int count, int seconds)
            throws InterruptedException {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(seconds);
        while (sc.sc().getExecutorIds().size() < count) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("only " + sc.sc().getExecutorIds().size() + " of " + count
                        + " executors registered in " + seconds + " s (see the Workers' logs)");
            }
            Thread.sleep(100);
        }
    }

    /** @param shuffle {@code rdma} or {@code builtin} */
    public static SparkConf conf(String appName, String shuffle) throws IOException {
        String home = System.getenv("SPARK_HOME");
        if (home == null) {
            throw new IllegalStateException("SPARK_HOME must name a directory (the benchmark scripts make an empty one)");
        }
        // Workers launch executors from it; the executors get this classpath, so an empty one does.
        Files.createDirectories(Path.of(home, "jars"));
        if (!Files.exists(Path.of(home, "RELEASE"))) {
            Files.createFile(Path.of(home, "RELEASE"));
        }
        Path local = Files.createTempDirectory("rdma-shuffle-job");
        local.toFile().deleteOnExit();
        SparkConf conf = new SparkConf().setMaster(System.getProperty(MASTER, "local-cluster[2,1,1024]"))
                .setAppName(appName + " (" + shuffle + ")")
                .set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.local.dir", local.toString())
                .set("spark.ui.enabled", "false")
                .set("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
                .set("spark.executor.extraClassPath", System.getProperty("java.class.path"))
                .set("spark.executorEnv.SPARK_SCALA_VERSION", "2.13")
                .set("spark.executorEnv.SPARK_LOCAL_IP", "127.0.0.1")
                .set("spark.executorEnv.JAVA_HOME", System.getProperty("java.home"))
                .set("spark.executor.extraJavaOptions", "--enable-native-access=ALL-UNNAMED " + executorOptions());
        switch (shuffle) {
            case "rdma" -> conf.set("spark.shuffle.manager", RdmaShuffleManager.class.getName());
            case "builtin", "builtin-control" -> { }
            default -> throw new IllegalArgumentException("shuffle rdma, builtin or builtin-control, not " + shuffle);
        }
        return conf;
    }
}
