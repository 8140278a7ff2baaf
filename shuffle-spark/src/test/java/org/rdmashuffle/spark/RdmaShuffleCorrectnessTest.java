package org.rdmashuffle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The same workloads with Spark's built-in shuffle and with this plugin, in separate executor JVMs:
 * identical results, and the blocks really came over RDMA (the software provider here).
 */
class RdmaShuffleCorrectnessTest {
    @TempDir
    static Path scratch;

    private static Map<String, List<String>> builtInRdd;
    private static Map<String, List<String>> builtInSql;

    @BeforeAll
    static void builtIn() throws Exception {
        SparkConf conf = SparkClusterSupport.conf("built-in reference", false, scratch.resolve("builtin"));
        Workloads.adaptive(conf);
        try (SparkSession spark = SparkSession.builder().config(conf).getOrCreate()) {
            builtInRdd = Workloads.rdd(JavaSparkContext.fromSparkContext(spark.sparkContext()));
            builtInSql = Workloads.sql(spark);
        }
    }

    private static void assertSame(Map<String, List<String>> expected, Map<String, List<String>> actual) {
        for (Map.Entry<String, List<String>> e : expected.entrySet()) {
            List<String> got = actual.get(e.getKey());
            assertEquals(e.getValue().size(), got.size(), e.getKey() + ": row count");
            assertEquals(e.getValue(), got, e.getKey());
        }
    }

    private static void assertCarriedByRdma(JavaSparkContext sc) {
        long[] counts = SparkClusterSupport.fetchCounts(sc);
        assertTrue(counts[0] > 0, "no block came over RDMA: " + SparkClusterSupport.describeExecutors(sc));
        assertEquals(0, counts[1], "blocks went over Spark's transport: " + SparkClusterSupport.describeExecutors(sc));
    }

    @Test
    void rddAndSqlWithAdaptiveExecution_matchTheBuiltInShuffle() throws Exception {
        SparkConf conf = SparkClusterSupport.conf("rdma rdd+sql", true, scratch.resolve("rdma"));
        Workloads.adaptive(conf);
        try (SparkSession spark = SparkSession.builder().config(conf).getOrCreate()) {
            JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
            assertSame(builtInRdd, Workloads.rdd(sc));
            Map<String, List<String>> sql = Workloads.sql(spark);
            assertEquals(List.of("skew join, coalesced"), sql.get("sql plan"), "AQE did not split or coalesce");
            assertSame(builtInSql, sql);
            assertCarriedByRdma(sc);
        }
    }

    @Test
    void kryoWithoutCompression_matchesTheBuiltInShuffle() throws Exception {
        SparkConf conf = SparkClusterSupport.conf("rdma kryo", true, scratch.resolve("kryo"))
                .set("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
                .set("spark.shuffle.compress", "false");
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            assertSame(builtInRdd, Workloads.rdd(sc));
            assertCarriedByRdma(sc);
        }
    }

    @Test
    void ioEncryptionAndAuthentication_matchTheBuiltInShuffle() throws Exception {
        SparkConf conf = SparkClusterSupport.conf("rdma encrypted", true, scratch.resolve("encrypted"))
                .set("spark.io.encryption.enabled", "true")
                .set("spark.authenticate", "true")
                .set("spark.authenticate.secret", "a-shared-secret-of-thirty-two-bytes!");
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            assertSame(builtInRdd, Workloads.rdd(sc));
            assertCarriedByRdma(sc);
        }
    }
}
