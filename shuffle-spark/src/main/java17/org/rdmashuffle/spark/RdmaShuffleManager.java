package org.rdmashuffle.spark;

import java.util.Optional;

import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.shuffle.ShuffleBlockResolver;
import org.apache.spark.shuffle.ShuffleHandle;
import org.apache.spark.shuffle.ShuffleManager;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.shuffle.ShuffleReader;
import org.apache.spark.shuffle.ShuffleWriteMetricsReporter;
import org.apache.spark.shuffle.ShuffleWriter;
import org.apache.spark.shuffle.sort.SortShuffleManager;
import org.rdmashuffle.spark.metrics.ExecutorShuffleReport;
import org.rdmashuffle.verbs.EngineRuntime;

/**
 * {@code spark.shuffle.manager=org.rdmashuffle.spark.RdmaShuffleManager}: the class Spark loads by name,
 * on whatever JVM the driver or executor runs. Built for Java 17 (src/main/java17). Where the JVM can
 * run the engine ({@link EngineRuntime}) every call goes to the engine's manager, {@code
 * EngineShuffleManager} (docs/architecture.md); where it cannot, to Spark's own {@link SortShuffleManager},
 * with one WARN naming the reason ({@code RS09 jvm}), and the metrics plugin counts the executor as fallen
 * back for it. {@code spark.shuffle.rdma.fallback=false} fails instead.
 */
public final class RdmaShuffleManager implements ShuffleManager {
    /** Prefix of every setting (the engine's keys follow it, see docs/configuration.md). */
    public static final String PREFIX = "spark.shuffle.rdma.";
    /** Fall back to Spark's transport when the engine cannot start (default true). */
    public static final String FALLBACK = PREFIX + "fallback";
    /**
     * Outputs are served by the node's shuffle service, not by the executor that wrote them, so they
     * outlive it; needs {@code spark.shuffle.service.enabled} and {@code spark.authenticate} (default false).
     */
    public static final String SERVICE_ENABLED = PREFIX + "service.enabled";
    /**
     * Start an executor's engine when the executor starts, on a thread of its own (default true),
     * rather than in the first task that needs it (false).
     */
    public static final String START_AT_EXECUTOR_START = PREFIX + "startAtExecutorStart";
    /** The port of every node's RDMA shuffle service for Spark (default {@value #DEFAULT_SERVICE_PORT}). */
    public static final String SERVICE_PORT = PREFIX + "service.port";
    public static final int DEFAULT_SERVICE_PORT = 13571;
    /** The engine's shuffle manager, built for the engine's Java. */
    static final String ENGINE_MANAGER = "org.rdmashuffle.spark.EngineShuffleManager";

    private static final System.Logger LOG = System.getLogger(RdmaShuffleManager.class.getName());
    private static volatile RdmaShuffleManager current;

    /** The engine's manager, or Spark's sort shuffle where this JVM cannot run the engine. */
    private final ShuffleManager delegate;
    /** Why Spark's sort shuffle carries this JVM's shuffle (an {@code RS09} line); null where the engine's manager does. */
    private final String unavailable;

    public RdmaShuffleManager(SparkConf conf) {
        Optional<String> why = EngineRuntime.unavailable();
        if (why.isEmpty()) {
            delegate = EngineRuntime.load(RdmaShuffleManager.class, ShuffleManager.class, ENGINE_MANAGER, new Class<?>[] {SparkConf.class}, conf);
            unavailable = null;
        } else {
            if (!conf.getBoolean(FALLBACK, true)) {
                throw new IllegalStateException("rdma-shuffle cannot run in this JVM and " + FALLBACK + "=false: " + why.get());
            }
            delegate = new SortShuffleManager(conf);
            unavailable = why.get();
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: " + conf.get("spark.executor.id", "driver")
                    + " runs its shuffle on Spark's own sort shuffle: " + unavailable);
        }
        synchronized (RdmaShuffleManager.class) {
            current = this;
        }
    }

    @Override
    public <K, V, C> ShuffleHandle registerShuffle(int shuffleId, ShuffleDependency<K, V, C> dependency) {
        return delegate.registerShuffle(shuffleId, dependency);
    }

    @Override
    public <K, V> ShuffleWriter<K, V> getWriter(ShuffleHandle handle, long mapId, TaskContext context,
                                                ShuffleWriteMetricsReporter metrics) {
        return delegate.getWriter(handle, mapId, context, metrics);
    }

    @Override
    public <K, C> ShuffleReader<K, C> getReader(ShuffleHandle handle, int startMapIndex, int endMapIndex, int startPartition,
                                                int endPartition, TaskContext context, ShuffleReadMetricsReporter metrics) {
        return delegate.getReader(handle, startMapIndex, endMapIndex, startPartition, endPartition, context, metrics);
    }

    @Override
    public boolean unregisterShuffle(int shuffleId) {
        return delegate.unregisterShuffle(shuffleId);
    }

    @Override
    public ShuffleBlockResolver shuffleBlockResolver() {
        return delegate.shuffleBlockResolver();
    }

    @Override
    public void stop() {
        try {
            delegate.stop();
        } finally {
            // A stopped manager tells nothing of the next SparkContext in this JVM (local mode, a notebook's
            // second session): it would report its own engine, or its reason, for the next one's executor.
            synchronized (RdmaShuffleManager.class) {
                if (current == this) {
                    current = null;
                }
            }
        }
    }

    /** The engine's manager of this JVM, or null where Spark made none or this JVM cannot run the engine. */
    private static ShuffleCarrier carrier() {
        RdmaShuffleManager m = current;
        return m != null && m.delegate instanceof ShuffleCarrier c ? c : null;
    }

    /**
     * What carries this JVM's shuffle, for the main job and the tests: the provider and device, or why
     * Spark's built-in transport does; and how many blocks came over each.
     */
    public static String describe() {
        RdmaShuffleManager m = current;
        if (m == null) {
            return "no RdmaShuffleManager in this JVM";
        }
        ShuffleCarrier c = carrier();
        return c != null ? c.describe() : "Spark's built-in transport (the engine is not running: " + m.unavailable + ")";
    }

    /**
     * What carries this JVM's shuffle and what it moved, for the metrics plugin ({@link RdmaShufflePlugin}):
     * a report numbered {@code seq}, from executor {@code executorId}.
     */
    public static ExecutorShuffleReport report(String executorId, long seq) {
        RdmaShuffleManager m = current;
        if (m == null) {
            // Configured but not made yet (the plugin can start first): starting, not fallen back.
            SparkEnv env = SparkEnv.get();
            boolean ours = env != null && RdmaShuffleManager.class.getName().equals(env.conf().get("spark.shuffle.manager", ""));
            return ExecutorShuffleReport.notRunning(executorId, seq, ours ? ExecutorShuffleReport.STARTING
                    : ExecutorShuffleReport.NOT_RUNNING_PREFIX + RdmaShuffleManager.class.getName());
        }
        ShuffleCarrier c = carrier();
        return c != null ? c.report(executorId, seq) : ExecutorShuffleReport.notRunning(executorId, seq, m.unavailable);
    }

    /**
     * What this JVM fetched: {@code [blocks over RDMA, blocks over the built-in transport, bytes over
     * RDMA, bytes over the built-in transport]} (zeros where no engine's manager runs, e.g. with Spark's
     * own shuffle).
     */
    public static long[] fetchCounts() {
        ShuffleCarrier c = carrier();
        return c == null ? new long[4] : c.fetchCounts();
    }

    /** The thread that started this JVM's engine, or null if none has started (nor tried to). */
    public static String engineStartedOn() {
        ShuffleCarrier c = carrier();
        return c == null ? null : c.engineStartedOn();
    }
}
