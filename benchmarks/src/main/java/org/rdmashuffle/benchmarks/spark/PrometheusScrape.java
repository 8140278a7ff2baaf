package org.rdmashuffle.benchmarks.spark;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code --prometheus}: the job scrapes its own driver's Prometheus endpoint ({@code
 * /metrics/prometheus/}, Spark's PrometheusServlet) over HTTP as Prometheus would, twice a second
 * while the job runs and once after it, and prints the plugin's figures beside its own "carried by"
 * report and Spark's remote-read metrics (the cluster bed's test compares them). The plugin's
 * reports reach the driver once a second: the last scrape waits (at most 20 s) until the RDMA
 * blocks it shows equal Spark's count of remote blocks, or, for Spark's own shuffle, until every
 * executor has reported.
 */
final class PrometheusScrape implements AutoCloseable {
    /** What follows the application id in the plugin's driver-side metric names. */
    static final String PLUGIN = "_driver_plugin_org_rdmashuffle_spark_RdmaShufflePlugin_";
    /** What the job prints before the figures of the last scrape. */
    static final String AFTER = "prometheus after the job:";
    /** What the job prints before what the scrapes during the job saw. */
    static final String DURING = "prometheus during the job:";
    private static final Pattern LINE = Pattern.compile("^metrics_\\S*?" + PLUGIN + "(\\w+)_Value\\{type=\"gauges\"} (-?\\d+)$",
            Pattern.MULTILINE);

    private final String url;
    private final HttpClient http = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NORMAL)
            .connectTimeout(Duration.ofSeconds(5)).build();
    private final Thread thread;
    private volatile boolean stop;
    private int answered;
    private int failed;
    private long firstBlocks = -1;
    private long lastBlocks = -1;
    private final long startNanos = System.nanoTime();
    /** Each answered scrape during the job: milliseconds since the start, RDMA bytes, fallback bytes. */
    private final java.util.List<long[]> series = new java.util.ArrayList<>();
    /** What the job prints before the series of scrapes during the job (ScrapePlot draws it). */
    static final String SERIES = "prometheus series (ms engine.bytes fallback.bytes):";

    /** Starts scraping the driver UI at {@code uiUrl}. */
    PrometheusScrape(String uiUrl) {
        this.url = uiUrl + "/metrics/prometheus/";
        this.thread = Thread.ofPlatform().daemon().name("prometheus-scrape").start(this::scrapeWhileRunning);
    }

    /** The Spark settings that turn the driver's endpoint on. */
    static Map<String, String> settings() {
        return Map.of("spark.ui.enabled", "true", "spark.ui.port", "0", "spark.ui.prometheus.enabled", "true",
                "spark.metrics.conf.*.sink.prometheusServlet.class", "org.apache.spark.metrics.sink.PrometheusServlet",
                "spark.metrics.conf.*.sink.prometheusServlet.path", "/metrics/prometheus",
                "spark.shuffle.rdma.metrics.perLink", "true");
    }

    private void scrapeWhileRunning() {
        while (!stop) {
            try {
                Map<String, Long> m = scrape();
                long blocks = m.containsKey("rdma_blocks") ? sum(m, "rdma_blocks", "softwareProvider_blocks") : -1L;
                synchronized (this) {
                    series.add(new long[] {(System.nanoTime() - startNanos) / 1_000_000, sum(m, "rdma_bytes", "softwareProvider_bytes") == null ? 0L
                            : sum(m, "rdma_bytes", "softwareProvider_bytes"),
                            m.getOrDefault("fallback_bytes", 0L)});
                    answered++;
                    if (firstBlocks < 0) {
                        firstBlocks = blocks;
                    }
                    lastBlocks = blocks;
                }
            } catch (Exception e) {
                synchronized (this) {
                    failed++;
                }
            }
            try {
                Thread.sleep(500);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** The plugin's driver-side gauges now, by name after {@link #PLUGIN} (e.g. {@code rdma_blocks}). */
    Map<String, Long> scrape() throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IllegalStateException(url + " answered " + r.statusCode());
        }
        Map<String, Long> m = new TreeMap<>();
        Matcher x = LINE.matcher(r.body());
        while (x.find()) {
            m.put(x.group(1), Long.parseLong(x.group(2)));
        }
        return m;
    }

    /**
     * Stops scraping in the background, scrapes until the figures have settled, and returns the lines
     * to print: what the scrapes during the job saw, and the last scrape's figures beside Spark's.
     */
    List<String> finish(boolean rdma, long sparkRemoteBlocks, long sparkRemoteBytes, int executors) throws Exception {
        stop = true;
        thread.interrupt();
        thread.join(TimeUnit.SECONDS.toMillis(15));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        Map<String, Long> m = scrape();
        while (System.nanoTime() < deadline && !(rdma ? java.util.Objects.equals(sum(m, "rdma_blocks", "softwareProvider_blocks"), sparkRemoteBlocks)
                : m.getOrDefault("executors_reporting", 0L) >= executors)) {
            Thread.sleep(250);
            m = scrape();
        }
        String during;
        StringBuilder points = new StringBuilder(SERIES);
        synchronized (this) {
            during = DURING + " " + answered + " scrapes answered, " + failed + " failed; engine.blocks from " + firstBlocks
                    + " to " + lastBlocks;
            for (long[] p : series) {
                points.append(' ').append(p[0]).append(',').append(p[1]).append(',').append(p[2]);
            }
        }
        // The engine's figures are published by carrier (rdma.* a device's, softwareProvider.* the TCP provider's):
        // printed as the engine's sum, with each carrier's executors named apart.
        return List.of(during, points.toString(), AFTER + " engine.blocks=" + sum(m, "rdma_blocks", "softwareProvider_blocks")
                + " engine.bytes=" + sum(m, "rdma_bytes", "softwareProvider_bytes")
                + " fallback.blocks=" + m.get("fallback_blocks") + " executors.onEngine="
                + sum(m, "executors_onRdma", "executors_onSoftwareProvider") + " executors.fallenBack=" + m.get("executors_fallenBack") + " completionErrors.total="
                + m.get("completionErrors_total") + "; Spark's remote reads: blocks=" + sparkRemoteBlocks + " bytes="
                + sparkRemoteBytes, PER_EXECUTOR + perExecutor(m));
    }

    /** The sum of two gauges, null when neither was scraped. */
    private static Long sum(Map<String, Long> m, String a, String b) {
        Long x = m.get(a);
        Long y = m.get(b);
        return x == null && y == null ? null : (x == null ? 0 : x) + (y == null ? 0 : y);
    }

    /** What the job prints before each executor's figures on the endpoint. */
    static final String PER_EXECUTOR = "prometheus per executor (id=engine.blocks,engine.bytes,fallback.blocks,fallbackCode"
            + "[;host:blocks from it]):";

    /** {@code id=blocks,bytes,fallbackBlocks,fallbackCode} for each executor the endpoint names, by id. */
    private static String perExecutor(Map<String, Long> m) {
        StringBuilder b = new StringBuilder();
        Matcher x = Pattern.compile("executor_(\\w+?)_rdma_blocks").matcher("");
        for (String k : m.keySet()) {
            if (x.reset(k).matches()) {
                String id = x.group(1);
                String p = "executor_" + id + "_";
                b.append(' ').append(id).append('=').append(sum(m, p + "rdma_blocks", p + "softwareProvider_blocks")).append(',')
                        .append(sum(m, p + "rdma_bytes", p + "softwareProvider_bytes"))
                        .append(',').append(m.get(p + "fallback_blocks")).append(',').append(m.get(p + "fallbackCode"));
                Matcher link = Pattern.compile(Pattern.quote(p) + "(?:rdma|softwareProvider)_from_(\\w+)_blocks").matcher("");
                for (String l : m.keySet()) {
                    if (link.reset(l).matches()) {
                        b.append(';').append(link.group(1)).append(':').append(m.get(l));
                    }
                }
            }
        }
        return b.toString();
    }

    @Override
    public void close() {
        stop = true;
        thread.interrupt();
    }
}
