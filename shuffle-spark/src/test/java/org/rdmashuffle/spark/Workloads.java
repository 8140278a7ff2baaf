package org.rdmashuffle.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import scala.Tuple2;

/**
 * Shuffle workloads whose results can be compared across runs: each returns its rows as sorted text
 * (or in order, where order is the point, as for sortByKey). Data is spread over several map tasks so
 * most blocks are fetched from the other executor.
 */
final class Workloads {
    private Workloads() {
    }

    static JavaPairRDD<Integer, String> pairs(JavaSparkContext sc, int n, int keys) {
        return sc.parallelize(IntStream.range(0, 8).boxed().toList(), 8)
                .flatMapToPair(part -> {
                    List<Tuple2<Integer, String>> out = new ArrayList<>();
                    for (int i = part; i < n; i += 8) {
                        out.add(new Tuple2<>(Integer.hashCode(i * 31) % keys, "value-" + i));
                    }
                    return out.iterator();
                });
    }

    /** Every RDD operation that shuffles, by name. */
    static Map<String, List<String>> rdd(JavaSparkContext sc) {
        Map<String, List<String>> r = new LinkedHashMap<>();
        JavaPairRDD<Integer, String> p = pairs(sc, 60_000, 500);
        r.put("groupByKey", sorted(p.groupByKey(6).mapValues(Workloads::summary).collect()));
        r.put("reduceByKey", sorted(p.mapValues(v -> (long) v.length()).reduceByKey(Long::sum, 5).collect()));
        r.put("sortByKey", p.mapToPair(t -> new Tuple2<>(t._2(), t._1())).sortByKey(true, 4).map(Tuple2::toString).collect());
        JavaPairRDD<Integer, String> other = pairs(sc, 20_000, 700).mapValues(v -> v + "'");
        r.put("join", sorted(p.filter(t -> t._1() % 3 == 0).join(other.filter(t -> t._1() % 2 == 0), 7).collect()));
        r.put("cogroup", sorted(p.cogroup(other, 3).mapValues(t -> count(t._1()) + "+" + count(t._2())).collect()));
        return r;
    }

    /** SQL joins and aggregations with AQE on: coalesced partitions and a skew join split by map ranges. */
    static Map<String, List<String>> sql(SparkSession spark) {
        Map<String, List<String>> r = new LinkedHashMap<>();
        // Half the facts carry key 0: AQE splits that partition by map-index ranges (skew join).
        spark.range(0, 200_000, 1, 8).selectExpr("CASE WHEN id % 2 = 0 THEN 0 ELSE id % 1000 END AS k",
                "id AS v", "repeat('x', 20) AS pad").createOrReplaceTempView("facts");
        spark.range(0, 1000, 1, 4).selectExpr("id AS k", "concat('dim-', id) AS name").createOrReplaceTempView("dims");
        Dataset<Row> joined = spark.sql("SELECT d.name, count(*) AS n, sum(f.v) AS s FROM facts f JOIN dims d ON f.k = d.k "
                + "GROUP BY d.name");
        r.put("sql join+aggregate", sortedRows(joined));
        String plan = joined.queryExecution().executedPlan().toString();
        r.put("sql plan", List.of(plan.contains("SortMergeJoin(skew=true)") && plan.contains("AQEShuffleRead coalesced")
                ? "skew join, coalesced" : "no skew join or no coalescing: " + plan));
        r.put("sql aggregate", sortedRows(spark.sql("SELECT k % 17 AS g, count(*), max(v), min(pad) FROM facts GROUP BY k % 17")));
        r.put("sql window", sortedRows(spark.sql("SELECT k, v, row_number() OVER (PARTITION BY k % 5 ORDER BY v DESC) AS rn "
                + "FROM facts WHERE v < 5000")));
        return r;
    }

    /** AQE settings that make a skew join out of {@link #sql}'s data and coalesce small partitions. */
    static void adaptive(org.apache.spark.SparkConf conf) {
        conf.set("spark.sql.adaptive.enabled", "true")
                .set("spark.sql.adaptive.coalescePartitions.enabled", "true")
                .set("spark.sql.adaptive.skewJoin.enabled", "true")
                .set("spark.sql.adaptive.skewJoin.skewedPartitionFactor", "2")
                .set("spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes", "64k")
                .set("spark.sql.adaptive.advisoryPartitionSizeInBytes", "64k")
                .set("spark.sql.autoBroadcastJoinThreshold", "-1")
                .set("spark.sql.shuffle.partitions", "16");
    }

    /** "count/sum of hashes" of a group's values: equal groups, equal summaries, whatever their order. */
    static String summary(Iterable<String> values) {
        long count = 0;
        long sum = 0;
        for (String v : values) {
            count++;
            sum += v.hashCode();
        }
        return count + "/" + sum;
    }

    private static long count(Iterable<?> it) {
        long n = 0;
        for (Object ignored : it) {
            n++;
        }
        return n;
    }

    private static <T> List<String> sorted(List<T> rows) {
        return rows.stream().map(String::valueOf).sorted().toList();
    }

    private static List<String> sortedRows(Dataset<Row> df) {
        return df.collectAsList().stream().map(Row::toString).sorted().toList();
    }
}
