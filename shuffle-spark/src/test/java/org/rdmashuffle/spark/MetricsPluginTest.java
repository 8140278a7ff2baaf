package org.rdmashuffle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.spark.metrics.GrafanaDashboardTest;
import org.rdmashuffle.spark.metrics.PrometheusEndpoint;
import org.rdmashuffle.spark.metrics.PrometheusExpositionTest;
import org.rdmashuffle.spark.metrics.Promtool;

/**
 * {@link RdmaShufflePlugin} in a local cluster, scraped the way Prometheus scrapes Spark: over HTTP
 * from the driver's {@code /metrics/prometheus} (Spark's PrometheusServlet). The RDMA block and byte
 * counts there equal what the executors' managers counted (their "carried by" report) and Spark's own
 * remote-read task metrics; an executor whose engine cannot start is counted as fallen back under the
 * trouble its reason names. (With Spark's own shuffle manager the plugin loads and counts every executor
 * as fallen back: the 3-host bed's built-in run checks that, MainJobAcrossHostsTest.)
 */
class MetricsPluginTest {
    private static final String PLUGIN = "_plugin_org_rdmashuffle_spark_RdmaShufflePlugin_";

    @TempDir
    Path scratch;

    private static SparkConf withPrometheus(SparkConf conf) {
        return conf.set("spark.plugins", RdmaShufflePlugin.class.getName())
                .set("spark.ui.enabled", "true").set("spark.ui.port", "0").set("spark.ui.prometheus.enabled", "true")
                .set("spark.metrics.conf.*.sink.prometheusServlet.class", "org.apache.spark.metrics.sink.PrometheusServlet")
                .set("spark.metrics.conf.*.sink.prometheusServlet.path", "/metrics/prometheus")
                .set(RdmaShufflePlugin.REPORT_INTERVAL, "200ms")
                // Reducers on both executors whatever ran the maps (a CI run once had every task on one
                // executor: nothing remote to count), and both executors warm (see warm) before the job.
                .set("spark.locality.wait", "0")
                // Both executors live on 127.0.0.1: without this they would read each other's files from disk.
                .set("spark.shuffle.readHostLocalDisk", "false");
    }

    @Test
    void theDriversPrometheusEndpoint_countsWhatTheSoftwareProviderCarried_asTheExecutorsAndSparksTaskMetricsDo_andNothingSaysRdma() throws Exception {
        int nobody;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            nobody = s.getLocalPort(); // closed again: a Graphite sink there fails every report
        }
        // A sink that fails (every second, on the driver and the executors) never reaches the job.
        SparkConf conf = withPrometheus(SparkClusterSupport.conf("metrics", true, scratch))
                .set("spark.metrics.conf.*.sink.graphite.class", "org.apache.spark.metrics.sink.GraphiteSink")
                .set("spark.metrics.conf.*.sink.graphite.host", "127.0.0.1")
                .set("spark.metrics.conf.*.sink.graphite.port", Integer.toString(nobody))
                .set("spark.metrics.conf.*.sink.graphite.period", "1").set("spark.metrics.conf.*.sink.graphite.unit", "seconds");
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            RemoteReads reads = new RemoteReads();
            sc.sc().addSparkListener(reads);
            SparkClusterSupport.awaitExecutors(sc, 2);
            warm(sc);
            long groups = Workloads.pairs(sc, 60_000, 500).groupByKey(6).count();
            assertEquals(500, groups);
            sc.sc().listenerBus().waitUntilEmpty();
            long[] carried = carried(sc); // what each executor's manager counted: its "carried by" report
            assertTrue(carried[0] > 0, "blocks over the engine (the software provider here): " + carried[0]);
            assertEquals(0, carried[1], "blocks over the built-in transport");
            assertEquals(reads.blocks.get(), carried[0], "Spark's remote blocks fetched");
            assertEquals(reads.bytes.get(), carried[2], "Spark's remote bytes read");

            // These executors run on the software provider (RC over TCP): counted as such, and nothing says RDMA.
            String endpoint = sc.sc().uiWebUrl().get() + "/metrics/prometheus";
            Map<String, Long> m = scrapeUntil(endpoint, s -> s.getOrDefault("softwareProvider_blocks", -1L) == carried[0]
                    && s.getOrDefault("softwareProvider_bytes", -1L) == carried[2]);
            assertEquals(carried[0], m.get("softwareProvider_blocks"), "software provider blocks on the driver's endpoint: " + m);
            assertEquals(carried[2], m.get("softwareProvider_bytes"), "software provider bytes on the driver's endpoint: " + m);
            assertEquals(2L, m.get("executors_onSoftwareProvider"), m.toString());
            assertEquals(0L, m.get("executors_onRdma"), "the software provider is not RDMA: " + m);
            assertEquals(0L, m.get("executors_onSoftwareDevice"), m.toString());
            assertEquals(0L, m.get("rdma_blocks"), m.toString());
            assertEquals(0L, m.get("rdma_bytes"), m.toString());
            assertEquals(0L, m.get("executors_fallenBack"), m.toString());
            assertEquals(0L, m.get("fallback_blocks"), m.toString());
            assertEquals(0L, m.get("completionErrors_total"), m.toString());
            long perExecutor = 0;
            for (Map.Entry<String, Long> e : m.entrySet()) {
                if (e.getKey().matches("executor_\\w+?_softwareProvider_bytes")) {
                    perExecutor += e.getValue();
                }
                if (e.getKey().matches("(.*_)?(rdma|onRdma)(_.*)?")) {
                    assertEquals(0L, e.getValue(), "a figure that says RDMA on a run without a device: " + e.getKey() + " in " + m);
                }
            }
            assertEquals(carried[2], perExecutor, "the executors' own software provider bytes add up to the total: " + m);
            assertTheExpositionCountsWhatEachExecutorCarried(sc, carriedByExecutor(sc));
        }
    }

    /**
     * The driver's own exposition (labels, counters, a histogram: {@code /metrics/rdma-shuffle/}), scraped over HTTP:
     * promtool's linter finds nothing; each executor's {@code rdmashuffle_fetched_bytes_total{carrier="software_provider"}}
     * and blocks equal what that executor's manager counted, the device's are 0, the latency histogram counts every
     * block; no name carries the application's id; and every metric the dashboard's Spark panels query is in it.
     */
    private static void assertTheExpositionCountsWhatEachExecutorCarried(JavaSparkContext sc, Map<String, long[]> carried)
            throws Exception {
        String endpoint = sc.sc().uiWebUrl().get() + PrometheusEndpoint.PATH + "/";
        long blocks = carried.values().stream().mapToLong(c -> c[0]).sum();
        String text = scrapeText(endpoint);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (PrometheusExpositionTest.sum(PrometheusExpositionTest.samples(text), "rdmashuffle_fetch_latency_seconds_count") != blocks
                && System.nanoTime() < deadline) {
            Thread.sleep(200);
            text = scrapeText(endpoint);
        }
        Promtool.checkMetrics(text);
        Map<String, Double> s = PrometheusExpositionTest.samples(text);
        String app = "application=\"" + sc.sc().applicationId() + "\"";
        assertEquals(carried.keySet(), new java.util.TreeSet<>(executorsIn(text)), "executors in the exposition: " + text);
        for (Map.Entry<String, long[]> e : carried.entrySet()) {
            String ex = "executor=\"" + e.getKey() + "\"";
            assertEquals(e.getValue()[0], PrometheusExpositionTest.sum(s, "rdmashuffle_fetched_blocks_total", app, ex,
                    "carrier=\"software_provider\""), ex + ": " + text);
            assertEquals(e.getValue()[2], PrometheusExpositionTest.sum(s, "rdmashuffle_fetched_bytes_total", app, ex,
                    "carrier=\"software_provider\""), ex + ": " + text);
            assertEquals(e.getValue()[1], PrometheusExpositionTest.sum(s, "rdmashuffle_fetched_blocks_total", app, ex,
                    "carrier=\"spark_transport\""), ex);
            assertEquals(e.getValue()[0], PrometheusExpositionTest.sum(s, "rdmashuffle_fetch_latency_seconds_count", app, ex),
                    "the histogram counts every block the engine fetched, " + ex);
        }
        assertEquals(0, PrometheusExpositionTest.sum(s, "rdmashuffle_fetched_bytes_total", "carrier=\"rdma_device\""), text);
        assertEquals(0, PrometheusExpositionTest.sum(s, "rdmashuffle_executors", app, "carrier=\"rdma_device\""), text);
        assertEquals(2, PrometheusExpositionTest.sum(s, "rdmashuffle_executors", app, "carrier=\"software_provider\""), text);
        assertEquals(2, PrometheusExpositionTest.sum(s, "rdmashuffle_executor_info", app, "provider=\"software\"",
                "device_kind=\"software\""), text);
        java.util.Set<String> names = new java.util.TreeSet<>();
        text.lines().filter(l -> !l.startsWith("#") && !l.isBlank()).forEach(l -> names.add(l.split("[{ ]", 2)[0]));
        for (String name : names) {
            assertTrue(!name.contains(sc.sc().applicationId()) && !name.contains(sc.sc().applicationId().replace('-', '_')),
                    "the application's id in a name: " + name);
        }
        java.util.Set<String> queried = GrafanaDashboardTest.sparkMetricNames();
        assertTrue(queried.size() >= 15, queried.toString());
        queried.removeAll(names);
        assertEquals(java.util.Set.of(), queried, "metrics the dashboard's Spark panels query that the scrape lacks: " + names);
    }

    private static List<String> executorsIn(String text) {
        Matcher m = Pattern.compile("(?m)^rdmashuffle_executor_info\\{.*?executor=\"([^\"]+)\"").matcher(text);
        List<String> out = new java.util.ArrayList<>();
        while (m.find()) {
            out.add(m.group(1));
        }
        return out;
    }

    private static String scrapeText(String endpoint) throws Exception {
        return HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NORMAL).build().send(HttpRequest.newBuilder(
                URI.create(endpoint)).timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString()).body();
    }

    /**
     * An executor whose engine cannot start (the libibverbs provider asked for, on a machine without a
     * device) falls back; the driver's endpoint counts it under the trouble its reason names
     * ({@code executors.fallenBack.no-device}, docs/troubleshooting.md RS01), and the job runs.
     */
    @Test
    void executorsWithoutADevice_fallBack_countedByTheTroubleTheirReasonNames() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeFalse(org.rdmashuffle.verbs.ibverbs.IbverbsProvider.instance()
                .availability().available(), "this machine has a usable RDMA device: no executor would fall back");
        try (JavaSparkContext sc = new JavaSparkContext(withPrometheus(SparkClusterSupport.conf("metrics, no device", true,
                scratch)).set("spark.shuffle.rdma.provider", "ibverbs"))) {
            SparkClusterSupport.awaitExecutors(sc, 2);
            warm(sc);
            assertEquals(500, Workloads.pairs(sc, 20_000, 500).groupByKey(4).count());
            String endpoint = sc.sc().uiWebUrl().get() + "/metrics/prometheus";
            // Executors report that they fell back and the blocks they fetched on separate ticks: wait for both.
            Map<String, Long> m = scrapeUntil(endpoint, s -> s.getOrDefault("executors_fallenBack", 0L) == 2
                    && s.getOrDefault("fallback_blocks_engineUnavailable", 0L) > 0);
            assertEquals(2L, m.get("executors_fallenBack"), m.toString());
            assertEquals(2L, m.get("executors_fallenBack_no_device"), m.toString());
            assertEquals(0L, m.get("executors_fallenBack_other"), m.toString());
            assertEquals(0L, m.get("executors_onRdma"), m.toString());
            assertTrue(m.get("fallback_blocks_engineUnavailable") > 0, m.toString());
            String text = scrapeText(sc.sc().uiWebUrl().get() + PrometheusEndpoint.PATH + "/");
            Map<String, Double> s = PrometheusExpositionTest.samples(text);
            assertEquals(2, PrometheusExpositionTest.sum(s, "rdmashuffle_executors_fallen_back", "reason=\"no-device\""), text);
            assertEquals(2, PrometheusExpositionTest.sum(s, "rdmashuffle_executors", "carrier=\"spark_transport\""), text);
            assertEquals(2, PrometheusExpositionTest.sum(s, "rdmashuffle_executor_info", "carrier=\"spark_transport\"",
                    "code=\"RS01\""), text);
            assertTrue(PrometheusExpositionTest.sum(s, "rdmashuffle_fallback_blocks_total", "reason=\"engineUnavailable\"") > 0, text);
        }
    }

    /** Runs a task on each executor until both have run one: a slow first task would leave every map to the other. */
    private static void warm(JavaSparkContext sc) {
        for (int round = 0; round < 10; round++) {
            long executors = sc.parallelize(java.util.stream.IntStream.range(0, 8).boxed().toList(), 8)
                    .map(i -> org.apache.spark.SparkEnv.get().executorId()).collect().stream().distinct().count();
            if (executors >= 2) {
                return;
            }
        }
    }

    /** Sums over every executor of {@link RdmaShuffleManager#fetchCounts}: blocks and bytes over each transport. */
    private static long[] carried(JavaSparkContext sc) {
        long[] total = new long[4];
        carriedByExecutor(sc).values().forEach(c -> {
            for (int i = 0; i < 4; i++) {
                total[i] += c[i];
            }
        });
        return total;
    }

    /** Each executor's {@link RdmaShuffleManager#fetchCounts}, by executor id. */
    private static Map<String, long[]> carriedByExecutor(JavaSparkContext sc) {
        Map<String, long[]> byExecutor = new HashMap<>();
        for (int round = 0; round < 10 && byExecutor.size() < sc.sc().getExecutorIds().size(); round++) {
            List<String> seen = sc.parallelize(java.util.stream.IntStream.range(0, 20).boxed().toList(), 20).map(i -> {
                long[] c = RdmaShuffleManager.fetchCounts();
                return org.apache.spark.SparkEnv.get().executorId() + " " + c[0] + " " + c[1] + " " + c[2] + " " + c[3];
            }).collect();
            for (String s : seen) {
                String[] p = s.split(" ");
                byExecutor.putIfAbsent(p[0], new long[] {Long.parseLong(p[1]), Long.parseLong(p[2]), Long.parseLong(p[3]),
                        Long.parseLong(p[4])});
            }
        }
        return new java.util.TreeMap<>(byExecutor);
    }

    /** The plugin's driver-side gauges, by name after the plugin's prefix (e.g. {@code rdma_blocks}). */
    static Map<String, Long> scrape(String endpoint) throws Exception {
        HttpResponse<String> r = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NORMAL).build().send(HttpRequest.newBuilder(URI.create(endpoint))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), endpoint);
        Map<String, Long> m = new HashMap<>();
        Matcher x = Pattern.compile("^metrics_\\S*?_driver" + PLUGIN + "(\\w+)_Value\\{type=\"gauges\"} (-?\\d+)$",
                Pattern.MULTILINE).matcher(r.body());
        while (x.find()) {
            m.put(x.group(1), Long.parseLong(x.group(2)));
        }
        return m;
    }

    private static Map<String, Long> scrapeUntil(String endpoint, java.util.function.Predicate<Map<String, Long>> done)
            throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        Map<String, Long> m = scrape(endpoint);
        while (!done.test(m) && System.nanoTime() < deadline) {
            Thread.sleep(200);
            m = scrape(endpoint);
        }
        return m;
    }

    /** Spark's own count of remote shuffle reads, summed over every task. */
    private static final class RemoteReads extends SparkListener {
        final AtomicLong blocks = new AtomicLong();
        final AtomicLong bytes = new AtomicLong();

        @Override
        public void onTaskEnd(SparkListenerTaskEnd e) {
            if (e.taskMetrics() != null) {
                blocks.addAndGet(e.taskMetrics().shuffleReadMetrics().remoteBlocksFetched());
                bytes.addAndGet(e.taskMetrics().shuffleReadMetrics().remoteBytesRead());
            }
        }
    }
}
