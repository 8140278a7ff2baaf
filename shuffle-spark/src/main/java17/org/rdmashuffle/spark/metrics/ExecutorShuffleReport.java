package org.rdmashuffle.spark.metrics;

import java.io.Serializable;
import java.util.Map;
import java.util.TreeMap;

import org.rdmashuffle.verbs.Carrier;
import org.rdmashuffle.verbs.Trouble;

/**
 * What one executor's shuffle ran on and moved, as the executor sends it to the driver's side of the
 * plugin ({@link DriverShuffleMetrics}): what carries it ({@link #carrier}: a verbs device, the software
 * provider, or Spark's own transport and why); blocks and bytes over the engine and over Spark's transport; fallbacks by reason; fetch latency; failed completions. Plain values only: it
 * crosses Spark's RPC. Reports are numbered; the driver keeps the newest. Built for Java 17
 * (src/main/java17): a driver or executor on a JVM too old for the engine reports and counts too;
 * an engine's figures become a report in {@link ExecutorShuffleMetrics#report}.
 *
 * @param fallback why Spark's transport carries this executor's shuffle (the engine's failure to start),
 *        {@code "starting"} before it has started, or null when the engine carries it
 * @param provider the engine's verbs provider ({@code ibverbs}: a device, RDMA; {@code software}: the software
 *        provider, RC over TCP, not RDMA), "" without an engine
 * @param softwareDevice which kernel software device the engine's verbs device is ({@code rxe}, {@code siw}), or ""
 * @param blocksOverRdma blocks the engine fetched: over RDMA on a device, over TCP on the software provider
 *        ({@link #carrier} says which; the metrics publish them under the carrier's name)
 * @param fallbackBlocksByReason blocks handed to Spark's transport, by reason's metric name
 * @param completionErrors failed work completions by status name: those operators look for first always (0 too), others that occurred
 * @param rdmaBlocksFrom blocks fetched over RDMA by the host of the engine that served them (at most
 *        {@value #MAX_SERVERS} hosts: what crossed which link)
 * @param host the executor's host, as Spark names it ("" until the plugin has stamped it: {@link #on})
 * @param engineFigures the engine's counts and holdings that the driver's Prometheus exposition publishes per
 *        executor ({@link EngineFigures#NONE} without an engine)
 * @param format {@value #FORMAT} for a report of this shape. Records are deserialized by their components' names,
 *        whatever their serialVersionUID, so a report from an executor of another plugin version arrives with the
 *        components it lacks at 0 or null: the driver publishes only reports of its own format ({@link #readable})
 */
public record ExecutorShuffleReport(String executorId, long seq, String fallback, String provider, String device,
                                    String softwareDevice, String gid, String memory, long pinnableBytes, long blocksOverRdma, long bytesOverRdma,
                                    long blocksOverFallback, long bytesOverFallback, Map<String, Long> fallbackBlocksByReason,
                                    long fetchLatencyP50Micros, long fetchLatencyP99Micros, long fetchFailures,
                                    long connectionFailures, long registrationFailures, Map<String, Long> completionErrors,
                                    Map<String, Long> rdmaBlocksFrom, String host, EngineFigures engineFigures, int format)
        implements Serializable {
    private static final long serialVersionUID = 2L;
    /** The most serving hosts a report names (the rest count in the totals only). */
    public static final int MAX_SERVERS = 64;
    /** This shape of report: 2 added the host, the latency buckets and {@link EngineFigures} (issue 53). */
    public static final int FORMAT = 2;
    /** The most entries any map of a report may have: a larger one is not published (see {@link #readable}). */
    public static final int MAX_MAP_ENTRIES = 64;
    /** The longest string a report's label values may be (ids, host, device, kinds): longer ones are not published. */
    public static final int MAX_LABEL_CHARS = 256;
    /**
     * The upper bounds of the fetch latency histogram's buckets, in microseconds: powers of two from 8 µs to 2^25 µs
     * (33.5 s), the same on every executor so that buckets add up across executors and applications. Each is a
     * bound of the engine's own log-linear buckets, so the counts below each are exact.
     */
    public static final long[] LATENCY_BUCKET_MICROS = latencyBounds();

    private static long[] latencyBounds() {
        long[] b = new long[23];
        for (int i = 0; i < b.length; i++) {
            b[i] = 1L << (i + 3);
        }
        return b;
    }

    /** A report without host or engine figures: an executor without an engine ({@link #notRunning}), tests. */
    public ExecutorShuffleReport(String executorId, long seq, String fallback, String provider, String device,
                                 String softwareDevice, String gid, String memory, long pinnableBytes, long blocksOverRdma,
                                 long bytesOverRdma, long blocksOverFallback, long bytesOverFallback,
                                 Map<String, Long> fallbackBlocksByReason, long fetchLatencyP50Micros, long fetchLatencyP99Micros,
                                 long fetchFailures, long connectionFailures, long registrationFailures,
                                 Map<String, Long> completionErrors, Map<String, Long> rdmaBlocksFrom) {
        this(executorId, seq, fallback, provider, device, softwareDevice, gid, memory, pinnableBytes, blocksOverRdma,
                bytesOverRdma, blocksOverFallback, bytesOverFallback, fallbackBlocksByReason, fetchLatencyP50Micros,
                fetchLatencyP99Micros, fetchFailures, connectionFailures, registrationFailures, completionErrors, rdmaBlocksFrom,
                "", EngineFigures.NONE, FORMAT);
    }

    /**
     * The engine's figures the driver's Prometheus exposition needs beyond the totals above, bounded: the latency
     * histogram as counts below each of {@link #LATENCY_BUCKET_MICROS} (not only p50/p99: buckets add up), and
     * maps keyed by bounded sets (errno names, refusal kinds).
     *
     * @param fetchLatencyBelow blocks fetched in less than each bound of {@link #LATENCY_BUCKET_MICROS}, in order
     *        (cumulative), empty without an engine
     * @param fetchLatencyCount blocks whose latency was recorded (the histogram's +Inf bucket)
     * @param fetchLatencySumMicros their latencies' sum, in microseconds
     * @param registrations successful memory registrations (map outputs and fetch buffers)
     * @param registrationEvictions registrations released to make room
     * @param registrationFailuresByErrno failed registrations by errno name ({@code ENOMEM}, ...)
     * @param registeredBytes map-output bytes registered now
     * @param registeredLimitBytes what map outputs may register ({@code registeredMemoryLimit})
     * @param fetchBufferBytes fetch-buffer bytes registered now
     * @param fetchBufferLimitBytes what fetch buffers may register ({@code fetchBufferMemory})
     * @param servedRequests fetch requests this executor's engine answered
     * @param servedBlocks blocks it described to reducers
     * @param servedBytes their bytes
     * @param refusedByKind requests it refused, by kind ({@code busy}, {@code noSuchOutput}, ...): every kind, 0 too
     */
    public record EngineFigures(java.util.List<Long> fetchLatencyBelow, long fetchLatencyCount, long fetchLatencySumMicros,
                                long registrations, long registrationEvictions, Map<String, Long> registrationFailuresByErrno,
                                long registeredBytes, long registeredLimitBytes, long fetchBufferBytes, long fetchBufferLimitBytes,
                                long servedRequests, long servedBlocks, long servedBytes, Map<String, Long> refusedByKind)
            implements Serializable {
        private static final long serialVersionUID = 2L;
        public static final EngineFigures NONE = new EngineFigures(java.util.List.of(), 0, 0, 0, 0, Map.of(), 0, 0, 0, 0,
                0, 0, 0, Map.of());

        /** Whether the histogram has a count for every bound (an engine's) and every map is within bounds. */
        boolean readable() {
            return fetchLatencyBelow != null && registrationFailuresByErrno != null && refusedByKind != null
                    && (fetchLatencyBelow.isEmpty() || fetchLatencyBelow.size() == LATENCY_BUCKET_MICROS.length)
                    && withinBounds(registrationFailuresByErrno) && withinBounds(refusedByKind);
        }
    }

    /**
     * Whether the driver may publish this report: of its own {@link #FORMAT}, every map at most {@value
     * #MAX_MAP_ENTRIES} entries and every label value at most {@value #MAX_LABEL_CHARS} characters. What an
     * executor sends is bounded by construction; this keeps the driver's series bounded whatever arrives.
     */
    public boolean readable() {
        return format == FORMAT && executorId != null && host != null && provider != null && device != null
                && softwareDevice != null && engineFigures != null && engineFigures.readable()
                && withinBounds(fallbackBlocksByReason) && withinBounds(completionErrors) && withinBounds(rdmaBlocksFrom)
                && shortEnough(executorId) && shortEnough(host) && shortEnough(provider) && shortEnough(device)
                && shortEnough(softwareDevice);
    }

    private static boolean withinBounds(Map<String, Long> m) {
        if (m == null || m.size() > MAX_MAP_ENTRIES) {
            return false;
        }
        for (Map.Entry<String, Long> e : m.entrySet()) {
            if (!shortEnough(e.getKey()) || e.getValue() == null) {
                return false;
            }
        }
        return true;
    }

    private static boolean shortEnough(String s) {
        return s != null && s.length() <= MAX_LABEL_CHARS;
    }

    /** This report stamped with the executor's host (the plugin knows it; the shuffle manager that makes the report does not). */
    public ExecutorShuffleReport on(String executorHost) {
        return new ExecutorShuffleReport(executorId, seq, fallback, provider, device, softwareDevice, gid, memory, pinnableBytes,
                blocksOverRdma, bytesOverRdma, blocksOverFallback, bytesOverFallback, fallbackBlocksByReason, fetchLatencyP50Micros,
                fetchLatencyP99Micros, fetchFailures, connectionFailures, registrationFailures, completionErrors, rdmaBlocksFrom,
                executorHost, engineFigures, format);
    }

    /** Whether the engine carries this executor's shuffle (a device or the software provider). */
    public boolean engineRuns() {
        return fallback == null;
    }

    /** What carries this executor's shuffle: a verbs device, the software provider, or Spark's own transport (also while starting). */
    public Carrier carrier() {
        return engineRuns() ? Carrier.ofProvider(provider) : Carrier.HOST_TRANSPORT;
    }

    /** Whether RDMA carries this executor's shuffle: a verbs device (hardware, or a kernel software device such as rxe). */
    public boolean onRdma() {
        return carrier() == Carrier.DEVICE;
    }

    /** Whether the software provider (RC over TCP in the JVM, not RDMA) carries this executor's shuffle. */
    public boolean onSoftwareProvider() {
        return carrier() == Carrier.SOFTWARE_PROVIDER;
    }

    /** Blocks fetched over RDMA: the engine's, where it runs on a verbs device; 0 on the software provider. */
    public long rdmaBlocks() {
        return engineProvider() == Carrier.DEVICE ? blocksOverRdma : 0;
    }

    /** Bytes fetched over RDMA ({@link #rdmaBlocks}' bytes). */
    public long rdmaBytes() {
        return engineProvider() == Carrier.DEVICE ? bytesOverRdma : 0;
    }

    /** Blocks fetched over the software provider (TCP): the engine's, where it runs on that provider; else 0. */
    public long softwareProviderBlocks() {
        return engineProvider() == Carrier.SOFTWARE_PROVIDER ? blocksOverRdma : 0;
    }

    /** Bytes fetched over the software provider ({@link #softwareProviderBlocks}' bytes). */
    public long softwareProviderBytes() {
        return engineProvider() == Carrier.SOFTWARE_PROVIDER ? bytesOverRdma : 0;
    }

    /** The carrier of the engine's fetches by its provider, null where no engine ran (its provider unknown). */
    private Carrier engineProvider() {
        return provider.isEmpty() ? null : Carrier.ofProvider(provider);
    }

    /** The carrier in words: {@link Carrier#describe} for an engine, {@code Spark's built-in transport (<why>)} otherwise. */
    public String carrierDescription() {
        return engineRuns() ? Carrier.describe(provider, device, softwareDevice) : "Spark's built-in transport (" + fallback + ")";
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
     * #OTHER}; null if the engine carries its shuffle or is still starting.
     */
    public String fallbackKind() {
        if (engineRuns() || STARTING.equals(fallback)) {
            return null;
        }
        if (fallback.startsWith(NOT_RUNNING_PREFIX)) {
            return NOT_CONFIGURED;
        }
        return Trouble.in(fallback).map(Trouble::key).orElse(OTHER);
    }

    /**
     * {@link #fallbackKind} as a number, for sinks that publish numbers only: 0 on the engine (or still
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
        return new ExecutorShuffleReport(executorId, seq, why, "", "", "", "", "", -1, 0, 0, 0, 0, new TreeMap<>(), 0, 0, 0, 0, 0,
                new TreeMap<>(), new TreeMap<>());
    }

    /** {@code s} as one component of a metric name: letters, digits, '_' and '-' only ("none" if empty). */
    static String sanitize(String s) {
        return s.isEmpty() ? "none" : s.replaceAll("[^A-Za-z0-9_-]", "_");
    }

    /** The same figures, renumbered (what is sent is compared without its number). */
    public ExecutorShuffleReport withSeq(long n) {
        return new ExecutorShuffleReport(executorId, n, fallback, provider, device, softwareDevice, gid, memory, pinnableBytes, blocksOverRdma,
                bytesOverRdma, blocksOverFallback, bytesOverFallback, fallbackBlocksByReason, fetchLatencyP50Micros,
                fetchLatencyP99Micros, fetchFailures, connectionFailures, registrationFailures, completionErrors,
                rdmaBlocksFrom, host, engineFigures, format);
    }
}
