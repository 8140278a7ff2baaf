package org.rdmashuffle.spark.metrics;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.function.ToLongFunction;

import io.prometheus.metrics.config.EscapingScheme;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.InfoSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.prometheus.metrics.model.snapshots.Unit;
import org.rdmashuffle.spark.FallbackReason;
import org.rdmashuffle.verbs.Carrier;
import org.rdmashuffle.verbs.Trouble;

/**
 * One application's shuffle figures in Prometheus' text format, with the application, executor, host,
 * carrier, provider and kind as labels (docs/metrics.md, "The driver's Prometheus exposition"): counts are
 * counters ({@code _total}), sizes bytes, durations seconds, and fetch latency a histogram whose buckets
 * (the same bounds on every executor, {@link ExecutorShuffleReport#LATENCY_BUCKET_MICROS}) add up across
 * executors and applications. Built from the executors' newest reports ({@link DriverShuffleMetrics}) at
 * each scrape, in a registry of its own: nothing is kept between scrapes, and the application's series
 * go with its SparkContext.
 *
 * <p>Bounded: the first {@value DriverShuffleMetrics#MAX_EXECUTORS_SHOWN} executors to report have series
 * of their own; the rest are added up under {@code executor="other"} (totals stay true); every other label
 * takes values from bounded sets. Scraped on the UI's threads; reads the reports' map only.
 * Built for Java 17 (src/main/java17).
 */
public final class PrometheusExposition implements MultiCollector {
    /** The executor label of the executors past the first {@value DriverShuffleMetrics#MAX_EXECUTORS_SHOWN}. */
    static final String OTHER_EXECUTORS = "other";
    /** Every metric name starts so (docs/metrics.md). */
    private static final String NAME = "rdmashuffle_";

    private final java.util.function.Supplier<String> applicationId;
    private final DriverShuffleMetrics metrics;
    /** The application's id for this scrape's labels. */
    private String application = "";
    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final PrometheusTextFormatWriter writer = PrometheusTextFormatWriter.create();

    /** @param application the label every series carries: the application's id (YARN's application id on YARN) */
    public PrometheusExposition(String application, DriverShuffleMetrics metrics) {
        this(() -> application, metrics);
    }

    /**
     * @param applicationId the application's id, read at each scrape: a driver plugin starts before the
     *        scheduler has given the application its id (SparkContext.applicationId() is null then)
     */
    public PrometheusExposition(java.util.function.Supplier<String> applicationId, DriverShuffleMetrics metrics) {
        this.applicationId = applicationId;
        this.metrics = metrics;
        registry.register(this);
    }

    /** The content type of {@link #write}: Prometheus' text format 0.0.4. */
    public String contentType() {
        return writer.getContentType();
    }

    /** Writes every series now, in the text format. */
    public void write(OutputStream out) throws IOException {
        writer.write(out, registry.scrape(), EscapingScheme.UNDERSCORE_ESCAPING);
    }

    /** {@link #write} as a string (tests, the doctor). */
    public String scrape() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            write(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    /** The carrier label of each carrier (docs/metrics.md). */
    static String carrierLabel(Carrier c) {
        return c.label("spark");
    }

    /** The executors' series: one row per shown executor, and one adding up the rest. */
    private record Row(String executor, String host, List<ExecutorShuffleReport> reports) {
        long sum(ToLongFunction<ExecutorShuffleReport> f) {
            long n = 0;
            for (ExecutorShuffleReport r : reports) {
                n += f.applyAsLong(r);
            }
            return n;
        }

        boolean engine() {
            return reports.stream().anyMatch(ExecutorShuffleReport::engineRuns);
        }
    }

    /** Scrapes are answered one at a time: {@link #application} is this scrape's. */
    @Override
    public synchronized MetricSnapshots collect() {
        String id = applicationId.get();
        application = id == null ? "" : id;
        Map<String, ExecutorShuffleReport> reports = new TreeMap<>(metrics.reports());
        List<Row> rows = new ArrayList<>();
        List<ExecutorShuffleReport> rest = new ArrayList<>();
        for (ExecutorShuffleReport r : reports.values()) {
            if (metrics.shown(r.executorId())) {
                rows.add(new Row(r.executorId(), r.host(), List.of(r)));
            } else {
                rest.add(r);
            }
        }
        if (!rest.isEmpty()) {
            rows.add(new Row(OTHER_EXECUTORS, "", rest));
        }
        List<MetricSnapshot> out = new ArrayList<>();
        out.add(info(rows));
        out.add(executorsByCarrier(reports.values()));
        out.add(executorsFallenBack(reports.values()));
        out.add(byCarrier("fetched_blocks", "Blocks fetched, by what carried them.", null, rows,
                ExecutorShuffleReport::rdmaBlocks, ExecutorShuffleReport::softwareProviderBlocks,
                ExecutorShuffleReport::blocksOverFallback));
        out.add(byCarrier("fetched_bytes", "Bytes fetched, by what carried them.", Unit.BYTES, rows,
                ExecutorShuffleReport::rdmaBytes, ExecutorShuffleReport::softwareProviderBytes,
                ExecutorShuffleReport::bytesOverFallback));
        out.add(fallbackBlocks(rows));
        out.add(latency(rows));
        out.add(counter("fetch_failed_blocks", "Blocks whose fetch failed.", null, rows, ExecutorShuffleReport::fetchFailures));
        out.add(counter("connection_failures", "Connections to a peer's engine that could not be set up.", null, rows,
                ExecutorShuffleReport::connectionFailures));
        out.add(counter("registrations", "Memory registrations made (map outputs and fetch buffers).", null, rows,
                r -> r.engineFigures().registrations()));
        out.add(counter("registration_evictions", "Registrations released to make room for others.", null, rows,
                r -> r.engineFigures().registrationEvictions()));
        out.add(byKey("registration_failures", "Memory registrations that failed, by errno.", "errno", rows,
                r -> r.engineFigures().registrationFailuresByErrno()));
        out.add(byKey("completion_errors", "Work completions that failed, by status.", "status", rows,
                ExecutorShuffleReport::completionErrors));
        List<Row> engines = rows.stream().filter(Row::engine).toList();
        out.add(gauge("registered_bytes", "Map-output bytes registered now.", engines, r -> r.engineFigures().registeredBytes()));
        out.add(gauge("registered_limit_bytes", "What map outputs may register (registeredMemoryLimit).", engines,
                r -> r.engineFigures().registeredLimitBytes()));
        out.add(gauge("fetch_buffer_bytes", "Fetch-buffer bytes registered now.", engines, r -> r.engineFigures().fetchBufferBytes()));
        out.add(gauge("fetch_buffer_limit_bytes", "What fetch buffers may register (fetchBufferMemory).", engines,
                r -> r.engineFigures().fetchBufferLimitBytes()));
        // A limit does not add up: the executors past the shown ones have none of their own.
        out.add(gauge("memlock_limit_bytes", "The memlock limit the engine runs under; -1 where none limits it.",
                engines.stream().filter(r -> !r.executor().equals(OTHER_EXECUTORS)).toList(), ExecutorShuffleReport::pinnableBytes));
        out.add(counter("served_requests", "Fetch requests this executor's engine answered.", null, rows,
                r -> r.engineFigures().servedRequests()));
        out.add(counter("served_blocks", "Blocks this executor's engine described to reducers.", null, rows,
                r -> r.engineFigures().servedBlocks()));
        out.add(counter("served_bytes", "Bytes this executor's engine made readable to reducers.", Unit.BYTES, rows,
                r -> r.engineFigures().servedBytes()));
        out.add(byKey("refused_requests", "Fetch requests this executor's engine refused, by kind.", "kind", rows,
                r -> r.engineFigures().refusedByKind()));
        return new MetricSnapshots(out);
    }

    private Labels labels(Row row, String... more) {
        String[] kv = new String[6 + more.length];
        kv[0] = "application";
        kv[1] = application;
        kv[2] = "executor";
        kv[3] = row.executor();
        kv[4] = "host";
        kv[5] = row.host();
        System.arraycopy(more, 0, kv, 6, more.length);
        return Labels.of(kv);
    }

    private InfoSnapshot info(List<Row> rows) {
        InfoSnapshot.Builder b = InfoSnapshot.builder().name(NAME + "executor")
                .help("What carries each executor's shuffle: 1 per executor; provider, device and code \"\" where none.");
        for (Row row : rows) {
            if (row.executor().equals(OTHER_EXECUTORS)) {
                continue;
            }
            ExecutorShuffleReport r = row.reports().get(0);
            if (ExecutorShuffleReport.STARTING.equals(r.fallback())) {
                continue; // carried by nothing yet
            }
            boolean engine = r.engineRuns();
            String provider = !engine ? "" : r.onSoftwareProvider() ? "software" : "ibverbs";
            String deviceKind = !engine ? "" : r.onSoftwareProvider() || !r.softwareDevice().isEmpty() ? "software" : "hardware";
            String code = engine || r.fallback() == null ? "" : Trouble.in(r.fallback()).map(Trouble::code).orElse("");
            b.dataPoint(InfoSnapshot.InfoDataPointSnapshot.builder().labels(labels(row, "carrier", carrierLabel(r.carrier()),
                    "provider", provider, "device", engine ? r.device() : "", "device_kind", deviceKind, "code", code)).build());
        }
        return b.build();
    }

    /** Executors by what carries their shuffle, all three carriers (0 too); executors still starting are in none. */
    private GaugeSnapshot executorsByCarrier(Iterable<ExecutorShuffleReport> reports) {
        Map<Carrier, Long> n = new LinkedHashMap<>();
        for (Carrier c : Carrier.values()) {
            n.put(c, 0L);
        }
        for (ExecutorShuffleReport r : reports) {
            if (!ExecutorShuffleReport.STARTING.equals(r.fallback())) {
                n.merge(r.carrier(), 1L, Long::sum);
            }
        }
        GaugeSnapshot.Builder b = GaugeSnapshot.builder().name(NAME + "executors")
                .help("Executors by what carries their shuffle: a verbs device, the software provider (TCP), Spark's transport.");
        n.forEach((c, v) -> b.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder()
                .labels(Labels.of("application", application, "carrier", carrierLabel(c))).value(v).build()));
        return b.build();
    }

    /** Executors on Spark's transport by the trouble their reason names (every kind, 0 too). */
    private GaugeSnapshot executorsFallenBack(Iterable<ExecutorShuffleReport> reports) {
        Map<String, Long> n = new LinkedHashMap<>();
        for (Trouble t : Trouble.values()) {
            n.put(t.key(), 0L);
        }
        n.put(ExecutorShuffleReport.NOT_CONFIGURED, 0L);
        n.put(ExecutorShuffleReport.OTHER, 0L);
        for (ExecutorShuffleReport r : reports) {
            String kind = r.fallbackKind();
            if (kind != null) {
                n.merge(kind, 1L, Long::sum);
            }
        }
        GaugeSnapshot.Builder b = GaugeSnapshot.builder().name(NAME + "executors_fallen_back")
                .help("Executors whose shuffle Spark's transport carries, by the trouble their reason names (docs/troubleshooting.md).");
        n.forEach((reason, v) -> b.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder()
                .labels(Labels.of("application", application, "reason", reason)).value(v).build()));
        return b.build();
    }

    private CounterSnapshot byCarrier(String name, String help, Unit unit, List<Row> rows, ToLongFunction<ExecutorShuffleReport> device,
                                      ToLongFunction<ExecutorShuffleReport> softwareProvider,
                                      ToLongFunction<ExecutorShuffleReport> sparkTransport) {
        CounterSnapshot.Builder b = CounterSnapshot.builder().name(NAME + name).help(help).unit(unit);
        for (Row row : rows) {
            b.dataPoint(point(labels(row, "carrier", carrierLabel(Carrier.DEVICE)), row.sum(device)));
            b.dataPoint(point(labels(row, "carrier", carrierLabel(Carrier.SOFTWARE_PROVIDER)), row.sum(softwareProvider)));
            b.dataPoint(point(labels(row, "carrier", carrierLabel(Carrier.HOST_TRANSPORT)), row.sum(sparkTransport)));
        }
        return b.build();
    }

    private CounterSnapshot fallbackBlocks(List<Row> rows) {
        CounterSnapshot.Builder b = CounterSnapshot.builder().name(NAME + "fallback_blocks")
                .help("Blocks handed to Spark's transport, by reason.");
        for (Row row : rows) {
            for (FallbackReason why : FallbackReason.values()) {
                b.dataPoint(point(labels(row, "reason", why.metricName()),
                        row.sum(r -> r.fallbackBlocksByReason().getOrDefault(why.metricName(), 0L))));
            }
        }
        return b.build();
    }

    private HistogramSnapshot latency(List<Row> rows) {
        long[] boundsMicros = ExecutorShuffleReport.LATENCY_BUCKET_MICROS;
        double[] upper = new double[boundsMicros.length + 1];
        for (int i = 0; i < boundsMicros.length; i++) {
            upper[i] = boundsMicros[i] / 1e6;
        }
        upper[boundsMicros.length] = Double.POSITIVE_INFINITY;
        HistogramSnapshot.Builder b = HistogramSnapshot.builder().name(NAME + "fetch_latency_seconds").unit(Unit.SECONDS)
                .help("Time from a block asked for to the block delivered, on the executor that fetched it.");
        for (Row row : rows) {
            long[] below = new long[boundsMicros.length];
            long count = 0;
            long sumMicros = 0;
            for (ExecutorShuffleReport r : row.reports()) {
                ExecutorShuffleReport.EngineFigures f = r.engineFigures();
                if (f.fetchLatencyBelow().isEmpty()) {
                    continue;
                }
                for (int i = 0; i < below.length; i++) {
                    below[i] += f.fetchLatencyBelow().get(i);
                }
                count += f.fetchLatencyCount();
                sumMicros += f.fetchLatencySumMicros();
            }
            // The model takes each bucket's own count; the text format adds them up into le="..." again.
            long[] each = new long[upper.length];
            long before = 0;
            for (int i = 0; i < below.length; i++) {
                each[i] = Math.max(0, below[i] - before);
                before = Math.max(before, below[i]);
            }
            each[below.length] = Math.max(0, count - before);
            b.dataPoint(HistogramSnapshot.HistogramDataPointSnapshot.builder().labels(labels(row))
                    .classicHistogramBuckets(ClassicHistogramBuckets.of(upper, each)).sum(sumMicros / 1e6).build());
        }
        return b.build();
    }

    private CounterSnapshot counter(String name, String help, Unit unit, List<Row> rows, ToLongFunction<ExecutorShuffleReport> each) {
        CounterSnapshot.Builder b = CounterSnapshot.builder().name(NAME + name).help(help).unit(unit);
        for (Row row : rows) {
            b.dataPoint(point(labels(row), row.sum(each)));
        }
        return b.build();
    }

    /** A counter by one more label whose values are a report's map's keys (only keys that occurred, or every kind reported). */
    private CounterSnapshot byKey(String name, String help, String label, List<Row> rows,
                                  Function<ExecutorShuffleReport, Map<String, Long>> each) {
        CounterSnapshot.Builder b = CounterSnapshot.builder().name(NAME + name).help(help);
        for (Row row : rows) {
            Map<String, Long> sum = new TreeMap<>();
            for (ExecutorShuffleReport r : row.reports()) {
                each.apply(r).forEach((k, v) -> sum.merge(k, v, Long::sum));
            }
            sum.forEach((k, v) -> b.dataPoint(point(labels(row, label, k), v)));
        }
        return b.build();
    }

    private GaugeSnapshot gauge(String name, String help, List<Row> rows, ToLongFunction<ExecutorShuffleReport> each) {
        GaugeSnapshot.Builder b = GaugeSnapshot.builder().name(NAME + name).help(help).unit(Unit.BYTES);
        for (Row row : rows) {
            b.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().labels(labels(row)).value(row.sum(each)).build());
        }
        return b.build();
    }

    private static CounterSnapshot.CounterDataPointSnapshot point(Labels labels, long value) {
        return CounterSnapshot.CounterDataPointSnapshot.builder().labels(labels).value(value).build();
    }
}
