package org.rdmashuffle.spark.metrics;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.function.ToLongFunction;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;

/**
 * The driver's side of the metrics plugin: the application's view, from the reports its executors
 * send ({@link ExecutorShuffleReport}). Registered in the driver's metrics system, so Spark's
 * Prometheus servlet ({@code /metrics/prometheus}) serves them: how many executors run their shuffle
 * on RDMA (a verbs device), how many on the software provider (TCP, not RDMA) and how many fell back, the application's blocks and bytes over each transport and its
 * fallbacks by reason, and the same per executor ({@code executor.<id>.*}, for the first
 * {@value #MAX_EXECUTORS_SHOWN} executors; totals count all). An executor that fell back is named
 * once in the driver's log with its reason.
 *
 * <p>Reports of executors that have gone are kept (their bytes stay in the totals), at most
 * {@value #MAX_EXECUTORS_KEPT}; called on Spark's RPC threads, each report costs a map update.
 * Built for Java 17 (src/main/java17): a driver on any JVM Spark runs on counts its executors.
 */
public final class DriverShuffleMetrics {
    private static final System.Logger LOG = System.getLogger(DriverShuffleMetrics.class.getName());
    static final int MAX_EXECUTORS_SHOWN = 500;
    static final int MAX_EXECUTORS_KEPT = 100_000;

    private final MetricRegistry registry;
    private final ConcurrentMap<String, ExecutorShuffleReport> latest = new ConcurrentHashMap<>();
    /**
     * Whether each shown executor's blocks are also published by serving host ({@code executor.<id>.rdma.from.<host>.blocks},
     * {@code executor.<id>.softwareProvider.from.<host>.blocks} on the software provider).
     */
    private final boolean perLink;
    /** The per-link gauges registered: executor id and host. */
    private final java.util.Set<String> links = ConcurrentHashMap.newKeySet();
    /** The executors with series of their own: the first {@value #MAX_EXECUTORS_SHOWN} to report. */
    private final java.util.Set<String> shown = ConcurrentHashMap.newKeySet();
    /** Whether a report this driver cannot publish (another plugin version's, or out of bounds) has been logged. */
    private volatile boolean saidUnreadable;

    /**
     * @param perLink also publish each shown executor's RDMA blocks by serving host (executors x hosts
     *        series: for finding a slow or broken link, off by default)
     */
    public DriverShuffleMetrics(MetricRegistry registry, boolean perLink) {
        this.registry = registry;
        this.perLink = perLink;
        gauge("executors.reporting", r -> 1);
        // RDMA is a verbs device only (a kernel software device such as rxe counted too, and apart); the software
        // provider, RC over TCP in the JVM, has counts of its own, so "all executors on RDMA" is never TCP.
        gauge("executors.onRdma", r -> r.onRdma() ? 1 : 0);
        gauge("executors.onSoftwareDevice", r -> r.onRdma() && !r.softwareDevice().isEmpty() ? 1 : 0);
        gauge("executors.onSoftwareProvider", r -> r.onSoftwareProvider() ? 1 : 0);
        gauge("executors.fallenBack", r -> r.fallbackKind() != null ? 1 : 0);
        gauge("rdma.blocks", ExecutorShuffleReport::rdmaBlocks);
        gauge("rdma.bytes", ExecutorShuffleReport::rdmaBytes);
        gauge("softwareProvider.blocks", ExecutorShuffleReport::softwareProviderBlocks);
        gauge("softwareProvider.bytes", ExecutorShuffleReport::softwareProviderBytes);
        gauge("fallback.blocks", ExecutorShuffleReport::blocksOverFallback);
        gauge("fallback.bytes", ExecutorShuffleReport::bytesOverFallback);
        for (org.rdmashuffle.spark.FallbackReason why : org.rdmashuffle.spark.FallbackReason.values()) {
            gauge("fallback.blocks." + why.metricName(), r -> r.fallbackBlocksByReason().getOrDefault(why.metricName(), 0L));
        }
        List<String> kinds = new ArrayList<>();
        for (org.rdmashuffle.verbs.Trouble t : org.rdmashuffle.verbs.Trouble.values()) {
            kinds.add(t.key());
        }
        kinds.add(ExecutorShuffleReport.NOT_CONFIGURED);
        kinds.add(ExecutorShuffleReport.OTHER);
        for (String kind : kinds) {
            gauge("executors.fallenBack." + kind, r -> kind.equals(r.fallbackKind()) ? 1 : 0);
        }
        gauge("fetch.failedBlocks", ExecutorShuffleReport::fetchFailures);
        gauge("connections.failures", ExecutorShuffleReport::connectionFailures);
        gauge("registrations.failures", ExecutorShuffleReport::registrationFailures);
        gauge("completionErrors.total", r -> r.completionErrors().values().stream().mapToLong(Long::longValue).sum());
    }

    /** A report from an executor; anything else is ignored (returns false). */
    public boolean receive(Object message) {
        if (!(message instanceof ExecutorShuffleReport r)) {
            return false;
        }
        if (!r.readable()) {
            if (!saidUnreadable) {
                saidUnreadable = true;
                LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: a metrics report from executor " + r.executorId()
                        + " is not published: format " + r.format() + " (this driver reads " + ExecutorShuffleReport.FORMAT
                        + ") or beyond its bounds (is every executor on the driver's plugin version?); said once");
            }
            return true;
        }
        ExecutorShuffleReport before = latest.get(r.executorId());
        if (before == null && latest.size() >= MAX_EXECUTORS_KEPT) {
            return true;
        }
        ExecutorShuffleReport now = latest.merge(r.executorId(), r, (old, neu) -> neu.seq() > old.seq() ? neu : old);
        if (perLink && now == r) {
            publishLinks(r);
        }
        if (before == null && now == r) {
            firstFrom(r);
        } else if (before != null && now == r && before.engineRuns() && !r.engineRuns() && !ExecutorShuffleReport.STARTING.equals(r.fallback())) {
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: executor " + r.executorId() + " runs its shuffle over Spark's "
                    + "built-in transport: " + r.fallback());
        } else if (before != null && ExecutorShuffleReport.STARTING.equals(before.fallback()) && now == r) {
            said(r);
        }
        return true;
    }

    private void firstFrom(ExecutorShuffleReport r) {
        if (latest.size() <= MAX_EXECUTORS_SHOWN) {
            shown.add(r.executorId());
            String p = "executor." + ExecutorShuffleReport.sanitize(r.executorId()) + ".";
            one(p + "onRdma", r.executorId(), x -> x.onRdma() ? 1 : 0);
            one(p + "onSoftwareProvider", r.executorId(), x -> x.onSoftwareProvider() ? 1 : 0);
            one(p + "fallbackCode", r.executorId(), ExecutorShuffleReport::fallbackCode);
            one(p + "rdma.blocks", r.executorId(), ExecutorShuffleReport::rdmaBlocks);
            one(p + "rdma.bytes", r.executorId(), ExecutorShuffleReport::rdmaBytes);
            one(p + "softwareProvider.blocks", r.executorId(), ExecutorShuffleReport::softwareProviderBlocks);
            one(p + "softwareProvider.bytes", r.executorId(), ExecutorShuffleReport::softwareProviderBytes);
            one(p + "fallback.blocks", r.executorId(), ExecutorShuffleReport::blocksOverFallback);
            one(p + "fallback.bytes", r.executorId(), ExecutorShuffleReport::bytesOverFallback);
            one(p + "fetch.latencyP50Micros", r.executorId(), ExecutorShuffleReport::fetchLatencyP50Micros);
            one(p + "fetch.latencyP99Micros", r.executorId(), ExecutorShuffleReport::fetchLatencyP99Micros);
        }
        said(r);
    }

    /** Gauges for the serving hosts this executor has fetched from that have none yet (shown executors only). */
    private void publishLinks(ExecutorShuffleReport r) {
        if (latest.size() > MAX_EXECUTORS_SHOWN) {
            return;
        }
        String id = r.executorId();
        for (String host : r.rdmaBlocksFrom().keySet()) {
            if (links.add(id + "|" + host)) {
                one("executor." + ExecutorShuffleReport.sanitize(id) + (r.onSoftwareProvider() ? ".softwareProvider" : ".rdma")
                        + ".from." + ExecutorShuffleReport.sanitize(host)
                        + ".blocks", id, x -> x.rdmaBlocksFrom().getOrDefault(host, 0L));
            }
        }
    }

    private void said(ExecutorShuffleReport r) {
        if (r.engineRuns()) {
            LOG.log(System.Logger.Level.INFO, "rdma-shuffle: executor " + r.executorId() + "'s shuffle is carried by "
                    + r.carrierDescription() + (r.gid().isEmpty() ? "" : ", " + r.gid()) + ", memory " + r.memory());
        } else if (!ExecutorShuffleReport.STARTING.equals(r.fallback())) {
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: executor " + r.executorId() + " runs its shuffle over Spark's "
                    + "built-in transport: " + r.fallback());
        }
    }

    /** What each executor reported last, in executor order: one line each (logs, tests, the doctor). */
    public List<String> describe() {
        List<String> lines = new ArrayList<>();
        new java.util.TreeMap<>(latest).forEach((id, r) -> lines.add(id + ": " + r.carrierDescription()
                + (r.provider().isEmpty() ? "" : ", " + r.blocksOverRdma() + " blocks / " + r.bytesOverRdma() + " bytes "
                + org.rdmashuffle.verbs.Carrier.over(r.provider())) + ", "
                + r.blocksOverFallback() + " blocks / " + r.bytesOverFallback() + " bytes over the built-in transport"));
        return lines;
    }

    /** Whether this executor has series of its own (one of the first {@value #MAX_EXECUTORS_SHOWN} to report). */
    public boolean shown(String executorId) {
        return shown.contains(executorId);
    }

    /** The newest report of each executor, by executor id. */
    public Map<String, ExecutorShuffleReport> reports() {
        return Map.copyOf(latest);
    }

    private void gauge(String name, ToLongFunction<ExecutorShuffleReport> each) {
        registry.register(name, (Gauge<Long>) () -> {
            long n = 0;
            for (ExecutorShuffleReport r : latest.values()) {
                n += each.applyAsLong(r);
            }
            return n;
        });
    }

    private void one(String name, String executorId, ToLongFunction<ExecutorShuffleReport> value) {
        try {
            registry.register(name, (Gauge<Long>) () -> {
                ExecutorShuffleReport r = latest.get(executorId);
                return r == null ? 0L : value.applyAsLong(r);
            });
        } catch (IllegalArgumentException alreadyThere) {
            // two first reports raced: one gauge reads the same map
        }
    }
}
