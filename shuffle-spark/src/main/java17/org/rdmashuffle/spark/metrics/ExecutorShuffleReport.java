package org.rdmashuffle.spark.metrics;

import java.io.Serializable;
import java.util.Map;
import java.util.TreeMap;

import org.rdmashuffle.verbs.Trouble;

/**
 * What one executor's shuffle ran on and moved, as the executor sends it to the driver's side of the
 * plugin ({@link DriverShuffleMetrics}): whether RDMA carries it and, if not, why; blocks and bytes over
 * each transport; fallbacks by reason; fetch latency; failed completions. Plain values only: it
 * crosses Spark's RPC. Reports are numbered; the driver keeps the newest. Built for Java 17
 * (src/main/java17): a driver or executor on a JVM too old for the engine reports and counts too;
 * an engine's figures become a report in {@link ExecutorShuffleMetrics#report}.
 *
 * @param fallback why Spark's transport carries this executor's shuffle (the engine's failure to start),
 *        {@code "starting"} before it has started, or null when RDMA carries it
 * @param fallbackBlocksByReason blocks handed to Spark's transport, by reason's metric name
 * @param completionErrors failed work completions by status name, only statuses that occurred
 * @param rdmaBlocksFrom blocks fetched over RDMA by the host of the engine that served them (at most
 *        {@value #MAX_SERVERS} hosts: what crossed which link)
 */
public record ExecutorShuffleReport(String executorId, long seq, String fallback, String provider, String device,
                                    String gid, String memory, long pinnableBytes, long blocksOverRdma, long bytesOverRdma,
                                    long blocksOverFallback, long bytesOverFallback, Map<String, Long> fallbackBlocksByReason,
                                    long fetchLatencyP50Micros, long fetchLatencyP99Micros, long fetchFailures,
                                    long connectionFailures, long registrationFailures, Map<String, Long> completionErrors,
                                    Map<String, Long> rdmaBlocksFrom)
        implements Serializable {
    /** The most serving hosts a report names (the rest count in the totals only). */
    public static final int MAX_SERVERS = 64;

    public boolean onRdma() {
        return fallback == null;
    }

    /** What an executor reports before its engine has tried to start. */
    public static final String STARTING = "starting";
    /** The fallback kind of an executor whose shuffle manager is Spark's own. */
    static final String NOT_CONFIGURED = "notConfigured";
    /** The fallback kind of a reason no {@link Trouble} names. */
    static final String OTHER = "other";

    /**
     * Why this executor fell back, as a metric name: the {@link Trouble} its reason names ({@code
     * memlock}, {@code no-device}, ..., docs/troubleshooting.md), {@value #NOT_CONFIGURED}, or {@value
     * #OTHER}; null if RDMA carries its shuffle or its engine is still starting.
     */
    public String fallbackKind() {
        if (onRdma() || STARTING.equals(fallback)) {
            return null;
        }
        if (fallback.startsWith(NOT_RUNNING_PREFIX)) {
            return NOT_CONFIGURED;
        }
        return Trouble.in(fallback).map(Trouble::key).orElse(OTHER);
    }

    /**
     * {@link #fallbackKind} as a number, for sinks that publish numbers only: 0 on RDMA (or still
     * starting), the code's number for a {@link Trouble} (3 for {@code RS03 memlock}, docs/troubleshooting.md),
     * 98 for {@value #NOT_CONFIGURED}, 99 for {@value #OTHER}.
     */
    public long fallbackCode() {
        String kind = fallbackKind();
        if (kind == null) {
            return 0;
        }
        if (kind.equals(NOT_CONFIGURED)) {
            return 98;
        }
        return Trouble.in(fallback).map(t -> (long) Integer.parseInt(t.code().substring(2))).orElse(99L);
    }

    /** How the reason of an executor without the plugin's shuffle manager starts. */
    public static final String NOT_RUNNING_PREFIX = "spark.shuffle.manager is not ";

    /** An executor where no RdmaShuffleManager runs at all. */
    public static ExecutorShuffleReport notRunning(String executorId, long seq, String why) {
        return new ExecutorShuffleReport(executorId, seq, why, "", "", "", "", -1, 0, 0, 0, 0, new TreeMap<>(), 0, 0, 0, 0, 0,
                new TreeMap<>(), new TreeMap<>());
    }

    /** {@code s} as one component of a metric name: letters, digits, '_' and '-' only ("none" if empty). */
    static String sanitize(String s) {
        return s.isEmpty() ? "none" : s.replaceAll("[^A-Za-z0-9_-]", "_");
    }

    /** The same figures, renumbered (what is sent is compared without its number). */
    public ExecutorShuffleReport withSeq(long n) {
        return new ExecutorShuffleReport(executorId, n, fallback, provider, device, gid, memory, pinnableBytes, blocksOverRdma,
                bytesOverRdma, blocksOverFallback, bytesOverFallback, fallbackBlocksByReason, fetchLatencyP50Micros,
                fetchLatencyP99Micros, fetchFailures, connectionFailures, registrationFailures, completionErrors,
                rdmaBlocksFrom);
    }
}
