package org.rdmashuffle.spark.metrics;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import org.rdmashuffle.core.metrics.EngineMetrics;
import org.rdmashuffle.core.metrics.FetchCounts;
import org.rdmashuffle.core.metrics.LatencyHistogram;
import org.rdmashuffle.core.metrics.RegistrationCounts;
import org.rdmashuffle.verbs.WorkCompletionStatus;

/**
 * An executor's side of the metrics plugin: the shuffle's figures registered in Spark's metrics
 * system under the plugin's namespace (so every sink an operator configured gets them: the
 * Prometheus servlet on the driver via {@link DriverShuffleMetrics}, JMX, Graphite, CSV), and a report
 * sent to the driver once a second while anything changed.
 *
 * <p>Gauges read through: the engine counts, nothing here does. One snapshot of the engine serves
 * every gauge read within half a second, so a sink's sweep costs one snapshot, not thirty. Owns one
 * daemon thread ("rdma-shuffle-metrics"), stopped by {@link #close}; a sink or the driver failing
 * never reaches a task.
 */
public final class ExecutorShuffleMetrics implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ExecutorShuffleMetrics.class.getName());
    /** The statuses with a gauge of their own: what operators look for first (the rest count in the total). */
    static final WorkCompletionStatus[] NAMED_STATUSES = {WorkCompletionStatus.RNR_RETRY_EXC_ERR,
            WorkCompletionStatus.RETRY_EXC_ERR, WorkCompletionStatus.REM_ACCESS_ERR, WorkCompletionStatus.REM_INV_REQ_ERR,
            WorkCompletionStatus.LOC_PROT_ERR, WorkCompletionStatus.WR_FLUSH_ERR};
    /** The errnos with a registration-failure gauge of their own (memlock and permission; the rest count in the total). */
    static final String[] NAMED_ERRNOS = {"ENOMEM", "EPERM", "EFAULT", "EINVAL"};

    private final MetricRegistry registry;
    private final String executorId;
    private final BiFunction<String, Long, ExecutorShuffleReport> reports;
    private final Memo<EngineMetrics> engine;
    private final Memo<ExecutorShuffleReport> report;
    private final Consumer<Object> toDriver;
    private final ScheduledExecutorService thread;
    private ExecutorShuffleReport lastSent;
    private long seq;
    private boolean infoRegistered;

    /**
     * @param reports this executor's report, by executor id and number
     * @param engine this executor's engine's figures, null while none runs
     * @param toDriver sends a report to the driver's side (fire and forget)
     */
    public ExecutorShuffleMetrics(MetricRegistry registry, String executorId, BiFunction<String, Long, ExecutorShuffleReport> reports,
                                  Supplier<EngineMetrics> engine, Consumer<Object> toDriver, long periodMillis) {
        this.registry = registry;
        this.executorId = executorId;
        this.reports = reports;
        this.engine = new Memo<>(engine);
        this.report = new Memo<>(() -> reports.apply(executorId, 0L));
        this.toDriver = toDriver;
        register();
        ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1,
                r -> Thread.ofPlatform().daemon().name("rdma-shuffle-metrics").unstarted(r));
        t.setRemoveOnCancelPolicy(true);
        this.thread = t;
        thread.scheduleWithFixedDelay(this::tick, periodMillis, periodMillis, TimeUnit.MILLISECONDS);
    }

    private void register() {
        // Three carriers, never confused: RDMA is a verbs device only; the software provider (TCP) has names of its own.
        gauge("carrier.rdma", () -> report.get().onRdma() ? 1L : 0L);
        gauge("carrier.softwareDevice", () -> report.get().onRdma() && !report.get().softwareDevice().isEmpty() ? 1L : 0L);
        gauge("carrier.softwareProvider", () -> report.get().onSoftwareProvider() ? 1L : 0L);
        gauge("carrier.fallbackCode", () -> report.get().fallbackCode());
        gauge("rdma.blocks", () -> report.get().rdmaBlocks());
        gauge("rdma.bytes", () -> report.get().rdmaBytes());
        gauge("softwareProvider.blocks", () -> report.get().softwareProviderBlocks());
        gauge("softwareProvider.bytes", () -> report.get().softwareProviderBytes());
        gauge("fallback.blocks", () -> report.get().blocksOverFallback());
        gauge("fallback.bytes", () -> report.get().bytesOverFallback());
        for (org.rdmashuffle.spark.FallbackReason r : org.rdmashuffle.spark.FallbackReason.values()) {
            gauge("fallback.blocks." + r.metricName(),
                    () -> report.get().fallbackBlocksByReason().getOrDefault(r.metricName(), 0L));
        }
        registry.register("fetch.latencyMicros", new BucketHistogram(() -> fetches(FetchCounts.Snapshot::blockLatency)));
        gaugeOf("fetch.calls", e -> e.fetches().fetchCalls());
        gaugeOf("fetch.requests", e -> e.fetches().requests());
        gaugeOf("fetch.failedBlocks", e -> e.fetches().failedBlocks());
        registry.register("connections.setUpMicros", new BucketHistogram(() -> fetches(FetchCounts.Snapshot::connectionSetUp)));
        gaugeOf("connections.failures", e -> e.fetches().connectionFailures());
        gaugeOf("connections.fetching", e -> e.now().fetchConnections());
        gaugeOf("connections.serving", e -> e.now().servingConnections());
        gaugeOf("queuePairs", e -> e.now().queuePairs());
        gaugeOf("fetch.layoutCacheBytes", e -> e.now().layoutCacheBytes());
        gaugeOf("registrations.count", e -> registrations(e).count());
        gaugeOf("registrations.bytes", e -> registrations(e).bytes());
        gaugeOf("registrations.millis", e -> registrations(e).nanos() / 1_000_000);
        gaugeOf("registrations.failures", e -> registrations(e).failures());
        gaugeOf("registrations.evictions", e -> e.mapOutputRegistrations().evictions());
        for (String errno : NAMED_ERRNOS) {
            gaugeOf("registrations.failures." + errno, e -> registrations(e).failuresByErrno().getOrDefault(errno, 0L));
        }
        gaugeOf("registeredBytes", e -> e.now().registeredMapOutputBytes());
        // The fetch buffers' slabs stay registered until the engine stops: the bytes registered are those held now.
        gaugeOf("fetch.bufferBytes", e -> e.bufferRegistrations().bytes());
        gaugeOf("completionErrors.total", e -> e.completionErrors().values().stream().mapToLong(Long::longValue).sum());
        for (WorkCompletionStatus s : NAMED_STATUSES) {
            gaugeOf("completionErrors." + s.name(), e -> e.completionErrors().getOrDefault(s, 0L));
        }
        gaugeOf("served.requests", e -> e.served().requests());
        gaugeOf("served.blocks", e -> e.served().blocks());
        gaugeOf("served.bytes", e -> e.served().bytes());
        gaugeOf("served.refused", e -> e.served().refused());
        gauge("memlockLimitBytes", () -> {
            EngineMetrics e = engine.get();
            return e == null ? -1 : e.pinnableBytes();
        });
    }

    private static RegistrationCounts.Snapshot registrations(EngineMetrics e) {
        return e.mapOutputRegistrations().plus(e.bufferRegistrations());
    }

    private LatencyHistogram.Snapshot fetches(java.util.function.Function<FetchCounts.Snapshot, LatencyHistogram.Snapshot> which) {
        EngineMetrics e = engine.get();
        return e == null ? new LatencyHistogram().snapshot() : which.apply(e.fetches());
    }

    private void gauge(String name, Supplier<Long> value) {
        registry.register(name, (Gauge<Long>) value::get);
    }

    /** A gauge of the engine's figures: 0 while no engine runs. */
    private void gaugeOf(String name, ToLongFunction<EngineMetrics> value) {
        gauge(name, () -> {
            EngineMetrics e = engine.get();
            return e == null ? 0L : value.applyAsLong(e);
        });
    }

    /** Sends the report if it changed; once the engine is up, names its provider and device in gauges of value 1. */
    private void tick() {
        try {
            ExecutorShuffleReport r = reports.apply(executorId, 0L);
            if (!infoRegistered && r.engineRuns()) {
                infoRegistered = true;
                // Spark's sinks publish numbers only: the provider and device are in the names.
                gauge("provider." + ExecutorShuffleReport.sanitize(r.provider()), () -> 1L);
                gauge("device." + ExecutorShuffleReport.sanitize(r.device()), () -> 1L);
                gauge("gidIndex", () -> gidIndex(report.get().gid()));
            }
            if (!r.equals(lastSent)) {
                toDriver.accept(r.withSeq(++seq));
                lastSent = r;
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, "rdma-shuffle: the metrics report was not sent", e);
        }
    }

    /** The index in a report's GID ({@code GID[3] ::ffff:10.0.0.1} gives 3), or -1 when it has none. */
    static long gidIndex(String gid) {
        if (!gid.startsWith("GID[")) {
            return -1;
        }
        try {
            return Long.parseLong(gid.substring(4, gid.indexOf(']')));
        } catch (RuntimeException e) {
            return -1;
        }
    }

    /**
     * The executor as reported, from its manager's counts and its engine's figures ({@code engine} null: none runs).
     *
     * @param registeredLimitBytes what the engine's map outputs may register ({@code registeredMemoryLimit})
     * @param fetchBufferLimitBytes what its fetch buffers may register ({@code fetchBufferMemory})
     */
    public static ExecutorShuffleReport report(String executorId, long seq, String fallback, EngineMetrics engine,
                                               long blocksOverRdma, long bytesOverRdma, long blocksOverFallback,
                                               long bytesOverFallback, Map<String, Long> fallbackBlocksByReason,
                                               Map<String, Long> rdmaBlocksFrom, long registeredLimitBytes,
                                               long fetchBufferLimitBytes) {
        Map<String, Long> from = new TreeMap<>();
        rdmaBlocksFrom.forEach((host, n) -> {
            if (from.size() < ExecutorShuffleReport.MAX_SERVERS) {
                from.put(host, n);
            }
        });
        if (engine == null) {
            return new ExecutorShuffleReport(executorId, seq, fallback == null ? "no engine" : fallback, "", "", "", "", "", -1,
                    blocksOverRdma, bytesOverRdma, blocksOverFallback, bytesOverFallback,
                    new TreeMap<>(fallbackBlocksByReason), 0, 0, 0, 0, 0, new TreeMap<>(), from);
        }
        FetchCounts.Snapshot f = engine.fetches();
        // The statuses operators look for first are always there (0 too), so a series exists before its first error.
        Map<String, Long> errors = new TreeMap<>();
        for (WorkCompletionStatus s : NAMED_STATUSES) {
            errors.put(s.name(), 0L);
        }
        for (Map.Entry<WorkCompletionStatus, Long> e : engine.completionErrors().entrySet()) {
            if (e.getValue() > 0) {
                errors.put(e.getKey().name(), e.getValue());
            }
        }
        return new ExecutorShuffleReport(executorId, seq, null, engine.provider(), engine.device(), engine.softwareDevice(), engine.gid(),
                engine.memory(), engine.pinnableBytes(), blocksOverRdma, bytesOverRdma, blocksOverFallback, bytesOverFallback,
                new TreeMap<>(fallbackBlocksByReason), f.blockLatency().quantileMicros(0.5),
                f.blockLatency().quantileMicros(0.99), f.failedBlocks(), f.connectionFailures(),
                engine.mapOutputRegistrations().failures() + engine.bufferRegistrations().failures(), errors, from, "",
                figures(engine, registeredLimitBytes, fetchBufferLimitBytes), ExecutorShuffleReport.FORMAT);
    }

    /** What the driver's Prometheus exposition publishes of an engine, bounded ({@link ExecutorShuffleReport.EngineFigures}). */
    static ExecutorShuffleReport.EngineFigures figures(EngineMetrics engine, long registeredLimitBytes, long fetchBufferLimitBytes) {
        LatencyHistogram.Snapshot latency = engine.fetches().blockLatency();
        java.util.List<Long> below = new java.util.ArrayList<>();
        for (long bound : ExecutorShuffleReport.LATENCY_BUCKET_MICROS) {
            below.add(latency.countBelowMicros(bound));
        }
        RegistrationCounts.Snapshot registrations = registrations(engine);
        // errno names come from the kernel's few; past the bound they count under "other", so the map stays bounded.
        Map<String, Long> errnos = new TreeMap<>();
        for (String errno : NAMED_ERRNOS) {
            errnos.put(errno, 0L);
        }
        registrations.failuresByErrno().forEach((errno, n) -> errnos.merge(
                errnos.size() < ExecutorShuffleReport.MAX_MAP_ENTRIES - 1 || errnos.containsKey(errno) ? errno : "other", n, Long::sum));
        Map<String, Long> refused = new TreeMap<>();
        engine.served().refusals().forEach((kind, n) -> refused.put(kind.metricName(), n));
        return new ExecutorShuffleReport.EngineFigures(java.util.List.copyOf(below), latency.count(), latency.sumMicros(),
                registrations.count(), engine.mapOutputRegistrations().evictions() + engine.bufferRegistrations().evictions(),
                errnos, engine.now().registeredMapOutputBytes(), registeredLimitBytes, engine.bufferRegistrations().bytes(),
                fetchBufferLimitBytes, engine.served().requests(), engine.served().blocks(), engine.served().bytes(), refused);
    }

    /** Stops the thread, then sends the last report if it changed (best effort: the driver may be gone). */
    @Override
    public void close() {
        thread.shutdownNow();
        try {
            if (!thread.awaitTermination(2, TimeUnit.SECONDS)) {
                return;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        tick();
    }

    /** A value computed at most once per half second. */
    static final class Memo<T> {
        private static final long FRESH_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
        private final Supplier<T> source;
        private T value;
        private long at;
        private boolean valid;

        Memo(Supplier<T> source) {
            this.source = source;
        }

        synchronized T get() {
            long now = System.nanoTime();
            if (!valid || now - at > FRESH_NANOS) {
                value = source.get();
                at = now;
                valid = true;
            }
            return value;
        }
    }

    /** For tests: the registry's gauges' values now, by name. */
    Map<String, Object> values() {
        Map<String, Object> m = new java.util.TreeMap<>();
        registry.getGauges().forEach((k, g) -> m.put(k, g.getValue()));
        return m;
    }
}
