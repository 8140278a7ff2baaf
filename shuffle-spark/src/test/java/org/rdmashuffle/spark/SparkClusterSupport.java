package org.rdmashuffle.spark;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * Spark in local-cluster mode from the Maven test classpath: two executor JVMs of 1 GiB, everything
 * on 127.0.0.1. Spark's workers launch executors from {@code $SPARK_HOME} (set by the pom); an empty
 * one (a RELEASE file and a jars/ directory) will do, since the executors get the test classpath.
 */
final class SparkClusterSupport {
    static final String MASTER = "local-cluster[2,1,1024]";

    private SparkClusterSupport() {
    }

    static SparkConf conf(String name, boolean rdma, Path scratch) throws IOException {
        String sparkHome = System.getenv("SPARK_HOME");
        if (sparkHome == null) {
            throw new IllegalStateException("SPARK_HOME is not set (the pom sets it for the tests)");
        }
        Path home = Files.createDirectories(Path.of(sparkHome));
        Files.createDirectories(home.resolve("jars"));
        if (!Files.exists(home.resolve("RELEASE"))) {
            Files.createFile(home.resolve("RELEASE"));
        }
        Path local = Files.createDirectories(scratch.resolve("local"));
        // The in-process workers take their local dirs from a JVM-wide cache filled by the first
        // context: forget it, so this test's executors write under this test's spark.local.dir.
        org.apache.spark.util.Utils$.MODULE$.clearLocalRootDirs();
        SparkConf conf = new SparkConf().setMaster(MASTER).setAppName(name)
                .set("spark.home", home.toString())
                .set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.local.dir", local.toString())
                .set("spark.ui.enabled", "false")
                .set("spark.executor.extraClassPath", System.getProperty("java.class.path"))
                .set("spark.executorEnv.SPARK_SCALA_VERSION", "2.13")
                .set("spark.executorEnv.SPARK_LOCAL_IP", "127.0.0.1")
                .set("spark.executorEnv.JAVA_HOME", System.getProperty("java.home"))
                .set("spark.executor.extraJavaOptions", "--enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow")
                .set("spark.shuffle.rdma.provider", "software")
                // Small engine pools: two executors and the driver share this machine.
                .set("spark.shuffle.rdma.fetchBufferMemory", "64m")
                .set("spark.shuffle.rdma.srq.buffers", "64");
        if (rdma) {
            conf.set("spark.shuffle.manager", RdmaShuffleManager.class.getName());
        }
        return conf;
    }

    /**
     * Whether an entry of the test classpath holds rdma-shuffle's classes (a module's classes or jar, in
     * the reactor or in ~/.m2), or a library the plugin jar shades in (the Prometheus client's model and text
     * writer): what a classpath of Spark alone leaves out.
     */
    static boolean isOurs(String classpathEntry) {
        return classpathEntry.contains("/org/rdmashuffle/") || classpathEntry.contains("native-verbs/target")
                || classpathEntry.contains("shuffle-core/target") || classpathEntry.contains("shuffle-spark/target")
                || classpathEntry.contains("/io/prometheus/");
    }

    /** Waits (at most 2 minutes) until {@code n} executors have registered with the driver. */
    static void awaitExecutors(JavaSparkContext sc, int n) throws InterruptedException {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(120);
        while (sc.sc().getExecutorIds().size() < n) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("only " + sc.sc().getExecutorIds().size() + " of " + n + " executors came up");
            }
            Thread.sleep(100);
        }
    }

    /**
     * Called from a task: records this executor under {@code dir} and waits (at most a minute) until
     * tasks have started on {@code n} executors. A stage whose tasks all call it runs on all of them,
     * so its map outputs are spread and some blocks must be fetched remotely: left to the scheduler,
     * a slow-starting executor can get no map and its peer then reads every block locally.
     */
    static void meetOnExecutors(String dir, int n) throws IOException, InterruptedException {
        Path d = Files.createDirectories(Path.of(dir));
        Path mine = d.resolve(org.apache.spark.SparkEnv.get().executorId());
        try {
            Files.createFile(mine);
        } catch (java.nio.file.FileAlreadyExistsException e) {
            // an earlier task of this executor
        }
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
        while (true) {
            long seen;
            try (java.util.stream.Stream<Path> s = Files.list(d)) {
                seen = s.count();
            }
            if (seen >= n) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("tasks started on only " + seen + " of " + n + " executors in a minute");
            }
            Thread.sleep(20);
        }
    }

    /** What carries each executor's shuffle, one line per executor JVM. */
    static List<String> describeExecutors(JavaSparkContext sc) {
        return new ArrayList<>(new java.util.LinkedHashSet<>(sc.parallelize(java.util.stream.IntStream.range(0, 40).boxed().toList(), 40)
                .map(i -> org.apache.spark.SparkEnv.get().executorId() + ": " + RdmaShuffleManager.describe())
                .collect())); // no shuffle of its own (see fetchCounts)
    }

    /** Blocks fetched by all executors: {@code [over RDMA, over Spark's transport]}. */
    static long[] fetchCounts(JavaSparkContext sc) {
        // Every live executor must be asked: 40 tasks may all land on one, and the blocks another fetched
        // would go uncounted. So ask again (a few times) until each has answered once.
        int live = sc.sc().getExecutorIds().size();
        long[] total = new long[2];
        java.util.Set<String> executors = new java.util.HashSet<>();
        for (int round = 0; round < 10 && (round == 0 || executors.size() < live); round++) {
            // collect(), not distinct(): a shuffle here would itself go over RDMA and count in the next call.
            List<String> seen = sc.parallelize(java.util.stream.IntStream.range(0, 40).boxed().toList(), 40)
                    .map(i -> {
                        long[] c = RdmaShuffleManager.fetchCounts();
                        return org.apache.spark.SparkEnv.get().executorId() + " " + c[0] + " " + c[1];
                    }).collect();
            for (String s : seen) {
                String[] p = s.split(" ");
                if (executors.add(p[0])) {
                    total[0] += Long.parseLong(p[1]);
                    total[1] += Long.parseLong(p[2]);
                }
            }
        }
        return total;
    }
}
