package org.rdmashuffle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

import com.codahale.metrics.Gauge;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import scala.Tuple2;

/**
 * Executors whose Netty is not of the line the engine was built against do not start their engines:
 * Spark's own transport carries the job, with the right result, each executor says why in one {@code
 * RS11 dependency} line naming both versions, and the driver counts them as {@code
 * executors.fallenBack.dependency}. Here the executors run this build's Netty, and the engine's record
 * of what it was built against (first on their classpath) says 4.1: as a plugin built for another Spark
 * would find this one's.
 */
class DependencyMismatchTest {
    private static final String RECORD = "org/rdmashuffle/core/built-against.properties";

    @TempDir
    Path scratch;

    @Test
    void executorsWhoseNettyIsNotOfTheLineBuiltAgainst_runTheJobOnSparksTransport_sayingWhy() throws Exception {
        Properties built = new Properties();
        try (InputStream in = getClass().getClassLoader().getResourceAsStream(RECORD)) {
            built.load(in);
        }
        Path builtForAnotherSpark = scratch.resolve("built-for-another-spark");
        Files.createDirectories(builtForAnotherSpark.resolve(RECORD).getParent());
        Files.writeString(builtForAnotherSpark.resolve(RECORD), "netty.version=4.1.118.Final\nkryo.version="
                + built.getProperty("kryo.version") + "\n");
        SparkConf conf = SparkClusterSupport.conf("dependency mismatch", true, scratch)
                .set("spark.executor.extraClassPath", builtForAnotherSpark + File.pathSeparator + System.getProperty("java.class.path"))
                .set("spark.plugins", RdmaShufflePlugin.class.getName());
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            SparkClusterSupport.awaitExecutors(sc, 2);
            List<Integer> xs = new ArrayList<>();
            for (int i = 0; i < 20_000; i++) {
                xs.add(i);
            }
            long sum = sc.parallelize(xs, 8).mapToPair(i -> new Tuple2<>(i % 97, (long) i)).reduceByKey(Long::sum, 6)
                    .values().reduce(Long::sum);
            assertEquals(20_000L * 19_999L / 2, sum);

            long[] counts = SparkClusterSupport.fetchCounts(sc);
            assertTrue(counts[0] == 0 && counts[1] > 0, "blocks over RDMA/built-in: " + counts[0] + "/" + counts[1]);
            String nettyHere = built.getProperty("netty.version");
            for (String executor : SparkClusterSupport.describeExecutors(sc)) {
                assertTrue(executor.contains("RS11 dependency: saw Netty " + nettyHere + " (netty-common from "), executor);
                assertTrue(executor.contains("; needs Netty 4.1.x, the line rdma-shuffle was built against (4.1.118.Final); fix: "),
                        executor);
                String sawAndNeeds = executor.substring(executor.indexOf("RS11"), executor.indexOf("; fix: "));
                assertTrue(!sawAndNeeds.contains("Kryo"), "Kryo matches and is not named: " + executor);
            }
            assertEquals(2L, fallenBackForDependency(sc), "the driver counts both executors under RS11");
        }
    }

    /** The driver's {@code executors.fallenBack.dependency}, once both executors have reported (within a minute). */
    private static long fallenBackForDependency(JavaSparkContext sc) throws InterruptedException {
        Gauge<?> gauge = sc.env().metricsSystem().getSourcesByName("plugin." + RdmaShufflePlugin.class.getName()).head()
                .metricRegistry().getGauges().get("executors.fallenBack.dependency");
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (!Long.valueOf(2).equals(gauge.getValue()) && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        return (Long) gauge.getValue();
    }
}
