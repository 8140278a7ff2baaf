package org.rdmashuffle.spark.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.codahale.metrics.MetricRegistry;
import org.junit.jupiter.api.Test;

/**
 * The driver's Prometheus exposition from executors' reports: Prometheus' linter finds nothing in it, the
 * carriers are labels with the executors' own counts, the latency histogram's buckets add up, no name carries
 * an id, and past the first executors the rest add up under one executor label.
 */
public class PrometheusExpositionTest {
    private static final String APP = "app-20261203142233-0007";

    /** Latencies of {@code blocks} blocks spread over 8 µs .. 1 s, as an engine's figures report them. */
    private static ExecutorShuffleReport.EngineFigures figures(long blocks, long seed) {
        java.util.Random r = new java.util.Random(seed);
        long[] micros = new long[(int) blocks];
        long sum = 0;
        for (int i = 0; i < micros.length; i++) {
            micros[i] = (long) Math.exp(2 + r.nextDouble() * 12);
            sum += micros[i];
        }
        List<Long> below = new ArrayList<>();
        for (long bound : ExecutorShuffleReport.LATENCY_BUCKET_MICROS) {
            below.add(java.util.Arrays.stream(micros).filter(m -> m < bound).count());
        }
        Map<String, Long> refused = new TreeMap<>(Map.of("busy", 2L, "noSuchOutput", 0L, "registeredMemoryExhausted", 1L));
        return new ExecutorShuffleReport.EngineFigures(below, blocks, sum, 40, 3, Map.of("ENOMEM", 5L), 1 << 20, 64L << 30, 8 << 20,
                256 << 20, 17, 170, 17_000, refused);
    }

    private static ExecutorShuffleReport engine(String id, String provider, String device, String softwareDevice, long blocks) {
        return new ExecutorShuffleReport(id, 1, null, provider, device, softwareDevice, "", "pinned", 8L << 20, blocks, blocks * 100,
                3, 300, Map.of("peerWithoutEngine", 3L), 0, 0, 1, 2, 5, Map.of("REM_ACCESS_ERR", 4L), Map.of(),
                "host-" + id, figures(blocks, id.hashCode()), ExecutorShuffleReport.FORMAT);
    }

    private static ExecutorShuffleReport fallenBack(String id, String why) {
        return ExecutorShuffleReport.notRunning(id, 1, why).on("host-" + id);
    }

    /** Each sample's value by its line's name and labels, as written. */
    public static Map<String, Double> samples(String text) {
        Map<String, Double> m = new TreeMap<>();
        for (String line : text.lines().filter(l -> !l.startsWith("#") && !l.isBlank()).toList()) {
            int space = line.lastIndexOf(' ');
            m.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
        }
        return m;
    }

    /** The sum of the samples of {@code name} whose labels include every one of {@code labels} ({@code k="v"}). */
    public static double sum(Map<String, Double> samples, String name, String... labels) {
        double n = 0;
        for (Map.Entry<String, Double> e : samples.entrySet()) {
            String series = e.getKey();
            if (!series.equals(name) && !series.startsWith(name + "{")) {
                continue;
            }
            boolean all = true;
            for (String l : labels) {
                all &= series.contains(l);
            }
            if (all) {
                n += e.getValue();
            }
        }
        return n;
    }

    @Test
    void theExposition_passesPromtool_carriesLabelsNotIds_andEachExecutorsCounts() throws Exception {
        DriverShuffleMetrics m = new DriverShuffleMetrics(new MetricRegistry(), false);
        m.receive(engine("1", "ibverbs", "mlx5_0", "", 10));
        m.receive(engine("2", "ibverbs", "rxe0", "rxe", 20));
        m.receive(engine("3", "software", "soft0", "", 40));
        m.receive(fallenBack("4", "VerbsUnavailableException: RS03 memlock: saw memlock limit is 8 MiB; needs 64 MiB; fix: x"));
        m.receive(fallenBack("5", ExecutorShuffleReport.STARTING));
        String text = new PrometheusExposition(APP, m).scrape();
        Promtool.checkMetrics(text);
        Map<String, Double> s = samples(text);

        for (String line : text.lines().filter(l -> !l.isBlank()).toList()) {
            String name = line.startsWith("#") ? line.split(" ")[2] : line.split("[{ ]")[0];
            assertTrue(name.startsWith("rdmashuffle_"), line);
            assertFalse(name.contains(APP) || name.contains("app_") || name.matches(".*_[0-9]+(_.*)?"), "an id in a name: " + line);
        }
        String app = "application=\"" + APP + "\"";
        assertEquals(1000, sum(s, "rdmashuffle_fetched_bytes_total", app, "executor=\"1\"", "carrier=\"rdma_device\""));
        assertEquals(2000, sum(s, "rdmashuffle_fetched_bytes_total", "executor=\"2\"", "carrier=\"rdma_device\""));
        assertEquals(0, sum(s, "rdmashuffle_fetched_bytes_total", "executor=\"3\"", "carrier=\"rdma_device\""), "TCP is not a device");
        assertEquals(4000, sum(s, "rdmashuffle_fetched_bytes_total", "executor=\"3\"", "carrier=\"software_provider\""));
        assertEquals(3000, sum(s, "rdmashuffle_fetched_bytes_total", "carrier=\"rdma_device\""));
        assertEquals(900, sum(s, "rdmashuffle_fetched_bytes_total", "carrier=\"spark_transport\""), "three engines' 300 each");
        assertEquals(70, sum(s, "rdmashuffle_fetched_blocks_total", "carrier=\"rdma_device\"")
                + sum(s, "rdmashuffle_fetched_blocks_total", "carrier=\"software_provider\""));
        assertEquals(9, sum(s, "rdmashuffle_fallback_blocks_total", "reason=\"peerWithoutEngine\""));
        assertEquals(1, sum(s, "rdmashuffle_executor_info", "executor=\"2\"", "carrier=\"rdma_device\"", "provider=\"ibverbs\"",
                "device=\"rxe0\"", "device_kind=\"software\"", "host=\"host-2\""));
        assertEquals(1, sum(s, "rdmashuffle_executor_info", "executor=\"1\"", "device_kind=\"hardware\""));
        assertEquals(1, sum(s, "rdmashuffle_executor_info", "executor=\"3\"", "carrier=\"software_provider\"",
                "provider=\"software\""));
        assertEquals(1, sum(s, "rdmashuffle_executor_info", "executor=\"4\"", "carrier=\"spark_transport\"", "code=\"RS03\""));
        assertEquals(0, sum(s, "rdmashuffle_executor_info", "executor=\"5\""), "a starting executor is carried by nothing yet");
        assertEquals(2, sum(s, "rdmashuffle_executors", app, "carrier=\"rdma_device\""));
        assertEquals(1, sum(s, "rdmashuffle_executors", "carrier=\"software_provider\""));
        assertEquals(1, sum(s, "rdmashuffle_executors", "carrier=\"spark_transport\""));
        assertEquals(1, sum(s, "rdmashuffle_executors_fallen_back", "reason=\"memlock\""));
        assertEquals(0, sum(s, "rdmashuffle_executors_fallen_back", "reason=\"no-device\""), "every kind, 0 too");
        assertTrue(s.containsKey("rdmashuffle_executors_fallen_back{" + app + ",reason=\"no-device\"}"), text);
        assertEquals(12, sum(s, "rdmashuffle_completion_errors_total", "status=\"REM_ACCESS_ERR\""));
        assertEquals(15, sum(s, "rdmashuffle_registration_failures_total", "errno=\"ENOMEM\""));
        assertEquals(6, sum(s, "rdmashuffle_refused_requests_total", "kind=\"busy\""));
        assertEquals(0, sum(s, "rdmashuffle_refused_requests_total", "kind=\"noSuchOutput\""));
        assertEquals(3L * (64L << 30), sum(s, "rdmashuffle_registered_limit_bytes"), "engines only");
        assertEquals(8 << 20, sum(s, "rdmashuffle_memlock_limit_bytes", "executor=\"1\""));
        assertEquals(51_000, sum(s, "rdmashuffle_served_bytes_total"));

        // The histogram: cumulative, _count the blocks timed, buckets in seconds at the same bounds for every executor.
        for (String id : List.of("1", "2", "3")) {
            String ex = "executor=\"" + id + "\"";
            long blocks = Map.of("1", 10L, "2", 20L, "3", 40L).get(id);
            assertEquals(blocks, sum(s, "rdmashuffle_fetch_latency_seconds_count", ex));
            assertEquals(blocks, sum(s, "rdmashuffle_fetch_latency_seconds_bucket", ex, "le=\"+Inf\""));
            ExecutorShuffleReport.EngineFigures f = figures(blocks, id.hashCode());
            for (int i = 0; i < ExecutorShuffleReport.LATENCY_BUCKET_MICROS.length; i++) {
                String le = "le=\"" + ExecutorShuffleReport.LATENCY_BUCKET_MICROS[i] / 1e6 + "\"";
                assertEquals((double) f.fetchLatencyBelow().get(i), sum(s, "rdmashuffle_fetch_latency_seconds_bucket", ex, le), id + " " + le);
            }
            assertEquals(f.fetchLatencySumMicros() / 1e6, sum(s, "rdmashuffle_fetch_latency_seconds_sum", ex), 1e-9);
        }
        assertEquals(0, sum(s, "rdmashuffle_fetch_latency_seconds_count", "executor=\"4\""));
    }

    /** Past the first executors, the rest have no series of their own: they add up under executor="other", totals true. */
    @Test
    void pastTheShownExecutors_theRestAddUpUnderOne() throws Exception {
        DriverShuffleMetrics m = new DriverShuffleMetrics(new MetricRegistry(), false);
        int n = DriverShuffleMetrics.MAX_EXECUTORS_SHOWN + 7;
        for (int i = 1; i <= n; i++) {
            m.receive(engine(Integer.toString(i), "ibverbs", "mlx5_0", "", 2));
        }
        String text = new PrometheusExposition(APP, m).scrape();
        Promtool.checkMetrics(text);
        Map<String, Double> s = samples(text);
        assertEquals(200.0 * n, sum(s, "rdmashuffle_fetched_bytes_total", "carrier=\"rdma_device\""));
        assertEquals(1400, sum(s, "rdmashuffle_fetched_bytes_total", "executor=\"other\"", "carrier=\"rdma_device\""));
        assertEquals(2.0 * n, sum(s, "rdmashuffle_fetch_latency_seconds_count"));
        assertEquals(14, sum(s, "rdmashuffle_fetch_latency_seconds_count", "executor=\"other\""));
        Matcher series = Pattern.compile("(?m)^rdmashuffle_executor_info\\{").matcher(text);
        int info = 0;
        while (series.find()) {
            info++;
        }
        assertEquals(DriverShuffleMetrics.MAX_EXECUTORS_SHOWN, info);
        assertEquals(n, sum(s, "rdmashuffle_executors", "carrier=\"rdma_device\""));
    }

    /** A report of another plugin version (or out of bounds) is not published; the others are. */
    @Test
    void aReportOfAnotherFormat_orOutOfBounds_isNotPublished() {
        DriverShuffleMetrics m = new DriverShuffleMetrics(new MetricRegistry(), false);
        ExecutorShuffleReport ok = engine("1", "ibverbs", "mlx5_0", "", 10);
        ExecutorShuffleReport older = new ExecutorShuffleReport("2", 1, null, "ibverbs", "mlx5_0", "", "", "pinned", -1, 10, 1000,
                0, 0, Map.of(), 0, 0, 0, 0, 0, Map.of(), Map.of(), "h", ok.engineFigures(), 1);
        Map<String, Long> many = new TreeMap<>();
        for (int i = 0; i <= ExecutorShuffleReport.MAX_MAP_ENTRIES; i++) {
            many.put("status" + i, 1L);
        }
        ExecutorShuffleReport tooMany = new ExecutorShuffleReport("3", 1, null, "ibverbs", "mlx5_0", "", "", "pinned", -1, 10, 1000,
                0, 0, Map.of(), 0, 0, 0, 0, 0, many, Map.of(), "h", ok.engineFigures(), ExecutorShuffleReport.FORMAT);
        List<Long> shortHistogram = ok.engineFigures().fetchLatencyBelow().subList(0, 3);
        ExecutorShuffleReport.EngineFigures f = ok.engineFigures();
        ExecutorShuffleReport badBuckets = new ExecutorShuffleReport("4", 1, null, "ibverbs", "mlx5_0", "", "", "pinned", -1, 10,
                1000, 0, 0, Map.of(), 0, 0, 0, 0, 0, Map.of(), Map.of(), "h", new ExecutorShuffleReport.EngineFigures(shortHistogram,
                10, 1, 0, 0, Map.of(), 0, 0, 0, 0, 0, 0, 0, Map.of()), ExecutorShuffleReport.FORMAT);
        for (ExecutorShuffleReport r : List.of(ok, older, tooMany, badBuckets)) {
            assertTrue(m.receive(r));
        }
        assertEquals(List.of("1"), List.copyOf(m.reports().keySet()));
        assertTrue(f.fetchLatencyBelow().size() == ExecutorShuffleReport.LATENCY_BUCKET_MICROS.length);
    }
}
