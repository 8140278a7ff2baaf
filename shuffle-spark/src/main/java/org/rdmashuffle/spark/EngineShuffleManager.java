package org.rdmashuffle.spark;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.network.shuffle.BlockStoreClient;
import org.apache.spark.shuffle.BaseShuffleHandle;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.apache.spark.shuffle.ShuffleBlockResolver;
import org.apache.spark.shuffle.ShuffleHandle;
import org.apache.spark.shuffle.ShuffleManager;
import org.apache.spark.shuffle.ShuffleReadMetricsReporter;
import org.apache.spark.shuffle.ShuffleReader;
import org.apache.spark.shuffle.ShuffleWriteMetricsReporter;
import org.apache.spark.shuffle.ShuffleWriter;
import org.apache.spark.shuffle.sort.SortShuffleManager;
import org.apache.spark.storage.BlockManager;
import org.apache.spark.storage.BlockManagerId;
import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.config.EngineConfig;

/**
 * The shuffle manager behind {@code spark.shuffle.manager=org.rdmashuffle.spark.EngineShuffleManager} on a
 * JVM that runs the engine: {@link EngineShuffleManager}, which Spark loads by name on any JVM, makes this
 * one where {@link org.rdmashuffle.verbs.EngineRuntime} allows and hands every call to it.
 *
 * <p>Map side: Spark's own sort-shuffle writers and on-disk layout (data, index and checksum files),
 * so {@code MapStatus} sizes and checksums stay exactly Spark's; each committed output is then
 * registered with this process's RDMA engine ({@link RdmaShuffleWriter}). The engine's control
 * address travels to reducers inside the {@code MapStatus} location, as the {@code topologyInfo}
 * of this executor's shuffle server id ({@link #TOPOLOGY_PREFIX}).
 *
 * <p>Reduce side: Spark's own {@code ShuffleBlockFetcherIterator} (local and host-local blocks,
 * batch fetch, in-flight limits, corruption detection, fetch failures, metrics) with a block store
 * client whose remote fetches go over RDMA ({@link RdmaBlockStoreClient}).
 *
 * <p>Decommission: outputs another executor moves here ({@code spark.storage.decommission.shuffleBlocks.enabled})
 * are stored by Spark as this executor's own and their {@code MapStatus} then carries this executor's
 * shuffle server id, so reducers ask this engine; it finds them on disk at the first request
 * ({@link MovedOutputs}).
 *
 * <p>If the engine cannot start, this executor falls back to Spark's built-in transport with one
 * WARN naming the cause ({@code spark.shuffle.rdma.fallback=false} fails instead).
 */
public final class EngineShuffleManager implements ShuffleManager, ShuffleCarrier {
    /** The value conf/spark-defaults.conf ships for spark.authenticate.secret, to be replaced. */
    static final String SHIPPED_SECRET_PLACEHOLDER = "REPLACE-ME-";
    /** How an executor's shuffle server id says where its engine listens. */
    static final String TOPOLOGY_PREFIX = "rdma-shuffle=";

    private static final System.Logger LOG = System.getLogger(RdmaShuffleManager.class.getName());
    private static volatile EngineShuffleManager current;

    private final SparkConf conf;
    private final SortShuffleManager sort;
    private final Object lock = new Object();
    private volatile RdmaShuffleEngine engine;
    private volatile String unavailable;
    /** Set once a start was tried (under {@code lock}); read without it by {@link #engine()}'s fast path. */
    private volatile boolean started;
    /** The thread that started (or tried to start) the engine; null before. */
    private volatile String startedOn;
    /** Set by {@link #stop}: no engine starts after it. Guarded by {@code lock}. */
    private boolean stopped;
    /** Fetches handed to Spark's transport, off the engine's poller. */
    final FallbackFetches fallbacks = new FallbackFetches();
    /** What this executor's fetches moved over each transport. */
    final TransportCounts counts = new TransportCounts();
    /** The block store client the last reduce task used, for the next with the same engine locations. */
    private volatile RdmaBlockStoreClient lastClient;

    /** Made by {@link RdmaShuffleManager} (by name: this class is built for a newer Java than that one). */
    public EngineShuffleManager(SparkConf conf) {
        this.conf = conf;
        this.sort = new SortShuffleManager(conf);
        if ("driver".equals(conf.get("spark.executor.id", "driver"))) {
            // Where the application starts: a bad value is refused here, naming its key, rather than
            // costing every executor its engine (docs/configuration.md, strictConfig).
            SparkSettingsCheck.checkOnDriver(conf);
        }
        current = this;
        if (!"driver".equals(conf.get("spark.executor.id", "driver")) && conf.getBoolean(RdmaShuffleManager.START_AT_EXECUTOR_START, true)) {
            Thread.ofPlatform().daemon().name("rdma-shuffle-start").start(this::startWhenTheBlockManagerIsUp);
        }
    }

    /**
     * Starts the engine as soon as this executor's block manager knows its address (Spark makes the
     * shuffle manager first), rather than in the first task that needs it: starting it (the device, the
     * pollers, the control server, the fetch buffers, and loading the plugin's classes) took the first map
     * task of every executor a few hundred milliseconds on the task's own thread (docs/benchmarks.md,
     * "Where the time goes"). A task that asks for the engine while it starts waits for that start, as it
     * would have started it itself. Gives up after two minutes (a task then starts it, as before).
     */
    private void startWhenTheBlockManagerIsUp() {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MINUTES.toNanos(2);
        try {
            while (System.nanoTime() < deadline) {
                SparkEnv env = SparkEnv.get();
                if (env != null && env.blockManager() != null && env.blockManager().blockManagerId() != null) {
                    engine();
                    return;
                }
                synchronized (lock) {
                    if (stopped || started) {
                        return;
                    }
                }
                Thread.sleep(5);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException | Error e) {
            // engine() logged it (fallback) or a task's own call will throw it (no fallback): nothing to add
        }
    }

    /** The manager of this JVM, if Spark created one. */
    static EngineShuffleManager current() {
        return current;
    }

    @Override
    public <K, V, C> ShuffleHandle registerShuffle(int shuffleId, ShuffleDependency<K, V, C> dependency) {
        return sort.registerShuffle(shuffleId, dependency);
    }

    @Override
    public <K, V> ShuffleWriter<K, V> getWriter(ShuffleHandle handle, long mapId, TaskContext context,
                                                ShuffleWriteMetricsReporter metrics) {
        ShuffleWriter<K, V> writer = sort.getWriter(handle, mapId, context, metrics);
        RdmaShuffleEngine e = engine();
        // With the node's service serving, the output is found on disk there: nothing to register here.
        return e == null || conf.getBoolean(RdmaShuffleManager.SERVICE_ENABLED, false) ? writer
                : new RdmaShuffleWriter<>(writer, e, sort.shuffleBlockResolver(), handle.shuffleId(), mapId);
    }

    @Override
    public <K, C> ShuffleReader<K, C> getReader(ShuffleHandle handle, int startMapIndex, int endMapIndex, int startPartition,
                                                int endPartition, TaskContext context, ShuffleReadMetricsReporter metrics) {
        @SuppressWarnings("unchecked")
        BaseShuffleHandle<K, ?, C> base = (BaseShuffleHandle<K, ?, C>) handle;
        var blocksByAddress = SparkEnv.get().mapOutputTracker().getMapSizesByExecutorId(handle.shuffleId(), startMapIndex,
                endMapIndex, startPartition, endPartition);
        boolean batch = SortShuffleManager.canUseBatchFetch(startPartition, endPartition, context);
        return new RdmaShuffleReader<>(base, blocksByAddress, context, metrics, batch, this, engine());
    }

    @Override
    public boolean unregisterShuffle(int shuffleId) {
        RdmaShuffleEngine e = engine;
        if (e != null) {
            e.unregisterShuffle(shuffleId);
        }
        return sort.unregisterShuffle(shuffleId);
    }

    @Override
    public ShuffleBlockResolver shuffleBlockResolver() {
        return sort.shuffleBlockResolver();
    }

    /** A reduce task's block store client for these engine locations (by executor id); shared while they stay the same. */
    RdmaBlockStoreClient blockStoreClient(RdmaShuffleEngine e, Map<String, InetSocketAddress> engines, BlockStoreClient builtIn) {
        RdmaBlockStoreClient c = RdmaBlockStoreClient.reuseOrMake(lastClient, this, e, engines, builtIn);
        lastClient = c;
        return c;
    }

    IndexShuffleBlockResolver indexResolver() {
        return sort.shuffleBlockResolver();
    }

    @Override
    public void stop() {
        RdmaShuffleEngine e;
        synchronized (lock) { // after a start under way, which is bounded: none begins after this
            stopped = true;
            started = true;
            e = engine;
            engine = null;
        }
        if (e != null) {
            e.close();
        }
        fallbacks.close();
        sort.stop();
    }

    /**
     * This JVM's engine, started on first use, or null when it could not start (then Spark's own
     * transport carries this executor's shuffle, and one WARN said why).
     */
    RdmaShuffleEngine engine() {
        if (started) {
            return engine;
        }
        synchronized (lock) {
            if (started) {
                return engine;
            }
            startedOn = Thread.currentThread().getName();
            try {
                engine = start();
            } catch (RuntimeException | Error e) {
                unavailable = e.getClass().getSimpleName() + ": " + e.getMessage();
                if (!conf.getBoolean(RdmaShuffleManager.FALLBACK, true)) {
                    throw new IllegalStateException("rdma-shuffle: the RDMA engine cannot start and " + RdmaShuffleManager.FALLBACK
                            + "=false: " + unavailable, e);
                }
                LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: the RDMA engine cannot start on this executor, so its "
                        + "shuffle uses Spark's built-in transport: " + unavailable);
            }
            started = true;
            return engine;
        }
    }

    private RdmaShuffleEngine start() {
        SparkEnv env = SparkEnv.get();
        BlockManager bm = env.blockManager();
        String host = bm.blockManagerId().host();
        EngineConfig config = SparkSettings.engineConfig(conf);
        if (!conf.contains(RdmaShuffleManager.PREFIX + EngineConfig.KEY_BIND_ADDRESS)) {
            config.set(EngineConfig.KEY_BIND_ADDRESS, host);
        }
        // The software provider's data listener must be reachable from the other executors: the host's address.
        if (!conf.contains(RdmaShuffleManager.PREFIX + EngineConfig.KEY_SOFTWARE_BIND_ADDRESS)) {
            config.set(EngineConfig.KEY_SOFTWARE_BIND_ADDRESS, host);
        }
        if (!conf.contains(RdmaShuffleManager.PREFIX + EngineConfig.KEY_FETCH_BUFFER_MEMORY)) {
            config.set(EngineConfig.KEY_FETCH_BUFFER_MEMORY, Long.toString(fetchBufferMemory(conf)));
        }
        boolean service = conf.getBoolean(RdmaShuffleManager.SERVICE_ENABLED, false);
        if (service) {
            requireServiceSettings(conf);
        }
        byte[] secret = null;
        if (conf.getBoolean("spark.authenticate", false)) {
            secret = requireChosenSecret(env.securityManager().getSecretKey()).getBytes(StandardCharsets.UTF_8);
        }
        RdmaShuffleEngine e = RdmaShuffleEngine.start(config, conf.getAppId(), secret);
        if (!service) {
            // Outputs a decommissioned executor moves here name this executor's engine in their MapStatus.
            e.resolver(new MovedOutputs(sort.shuffleBlockResolver()));
        }
        InetSocketAddress servedAt = service ? InetSocketAddress.createUnresolved(host, conf.getInt(RdmaShuffleManager.SERVICE_PORT,
                RdmaShuffleManager.DEFAULT_SERVICE_PORT)) : e.address();
        try {
            publish(bm, servedAt);
        } catch (RuntimeException ex) {
            e.close();
            throw ex;
        }
        LOG.log(System.Logger.Level.INFO, "rdma-shuffle: executor " + bm.blockManagerId().executorId() + " fetches shuffle "
                + "blocks over " + e.providerName() + " device " + e.deviceName() + "; its outputs are served by "
                + (service ? "the node's shuffle service at " + servedAt : "itself, control plane " + e.address()));
        return e;
    }

    /**
     * Fetch buffers sized from what Spark lets this executor's tasks hold: each task keeps at most
     * {@code spark.reducer.maxSizeInFlight} of blocks asked for and not yet taken, and one block larger
     * than a fetch buffer streams through {@link org.rdmashuffle.core.client.FetchedBlock}'s pieces
     * (16 MiB read ahead) after Spark has stopped counting it; times the executor's task slots.
     */
    static long fetchBufferMemory(SparkConf conf) {
        long perTask = conf.getSizeAsBytes("spark.reducer.maxSizeInFlight", "48m") + (16L << 20);
        int slots = Math.max(1, conf.getInt("spark.executor.cores", Runtime.getRuntime().availableProcessors())
                / Math.max(1, conf.getInt("spark.task.cpus", 1)));
        return perTask * slots;
    }

    /**
     * The secret, unless it is the placeholder conf/spark-defaults.conf ships with: a secret printed in
     * a public file authenticates anyone, so the engine refuses it by name.
     */
    static String requireChosenSecret(String secret) {
        if (secret != null && secret.startsWith(SHIPPED_SECRET_PLACEHOLDER)) {
            throw new IllegalArgumentException("spark.authenticate.secret is still the placeholder from rdma-shuffle's "
                    + "conf/spark-defaults.conf: put a secret of your own (openssl rand -hex 32) in every node's "
                    + "spark-defaults.conf (docs/spark.md, Authentication)");
        }
        return secret;
    }

    /**
     * Service mode relies on Spark's external shuffle service to keep outputs of exited executors
     * and on the application secret the node's service was handed: both must be on.
     */
    static void requireServiceSettings(SparkConf conf) {
        if (!conf.getBoolean("spark.shuffle.service.enabled", false)) {
            throw new IllegalArgumentException(RdmaShuffleManager.SERVICE_ENABLED + "=true needs spark.shuffle.service.enabled=true: without "
                    + "Spark's external shuffle service, Spark forgets an executor's outputs when it exits");
        }
        if (!conf.getBoolean("spark.authenticate", false)) {
            throw new IllegalArgumentException(RdmaShuffleManager.SERVICE_ENABLED + "=true needs spark.authenticate=true: the node's RDMA "
                    + "shuffle service serves only applications whose reducers prove the application's secret");
        }
    }

    /**
     * Whether a block the engine could not fetch is fetched with Spark's own transport instead (with
     * fallback on): one the server will not serve by RDMA ({@code REFUSED}), from whichever server Spark
     * would have asked; and, when the engine that serves it is unreachable or refuses the handshake,
     * from Spark's external shuffle service if there is one -- the node's service in service mode, and
     * with only Spark's service on, the service that keeps serving an executor's files after dynamic
     * allocation released it (its map output locations name that service). Without Spark's service
     * an unreachable executor is gone: Spark's transport would only retry the same dead peer.
     */
    boolean fetchesOverSparkInstead(org.rdmashuffle.core.client.BlockFetchException.Kind kind) {
        if (!conf.getBoolean(RdmaShuffleManager.FALLBACK, true)) {
            return false;
        }
        return switch (kind) {
            case REFUSED -> true;
            case UNREACHABLE, NOT_AUTHENTICATED -> conf.getBoolean(RdmaShuffleManager.SERVICE_ENABLED, false)
                    || conf.getBoolean("spark.shuffle.service.enabled", false);
            case NO_SUCH_OUTPUT, FAILED -> false;
        };
    }

    /** Puts the engine's address into the shuffle server id that every MapStatus of this executor carries. */
    private static void publish(BlockManager bm, InetSocketAddress address) {
        BlockManagerId id = bm.shuffleServerId();
        bm.shuffleServerId_$eq(BlockManagerId.apply(id.executorId(), id.host(), id.port(),
                scala.Option.apply(TOPOLOGY_PREFIX + address.getHostString() + ":" + address.getPort())));
    }

    /** Where the engine of the executor behind {@code id} listens, or null if its shuffle is not served by RDMA. */
    static InetSocketAddress engineAddress(BlockManagerId id) {
        if (id.topologyInfo().isEmpty()) {
            return null;
        }
        String t = id.topologyInfo().get();
        if (!t.startsWith(TOPOLOGY_PREFIX)) {
            return null;
        }
        String hostPort = t.substring(TOPOLOGY_PREFIX.length());
        int colon = hostPort.lastIndexOf(':');
        return new InetSocketAddress(hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1)));
    }

    @Override
    public String describe() {
        RdmaShuffleEngine e = engine();
        // Three carriers, never confused (org.rdmashuffle.verbs.Carrier): RDMA names its device; the software
        // provider is never called RDMA; Spark's own transport says why the engine is not running.
        String carrier = e != null ? e.carrier() + " (provider " + e.providerName() + ", control "
                + e.address().getHostString() + ":" + e.address().getPort() + ")"
                + (e.windowUse().on() ? ", its outputs read through memory windows" : "")
                : "Spark's built-in transport (the engine is not running: " + unavailable + ")";
        return carrier + "; " + counts.describe(e != null ? org.rdmashuffle.verbs.Carrier.over(e.providerName())
                : "with the engine");
    }

    @Override
    public org.rdmashuffle.spark.metrics.ExecutorShuffleReport report(String executorId, long seq) {
        RdmaShuffleEngine e = engine;
        org.rdmashuffle.core.metrics.EngineMetrics em = e == null ? null : e.metrics();
        String state = e != null ? null : unavailable != null ? unavailable : started ? "stopped"
                : org.rdmashuffle.spark.metrics.ExecutorShuffleReport.STARTING;
        long[] c = counts.snapshot();
        return org.rdmashuffle.spark.metrics.ExecutorShuffleMetrics.report(executorId, seq, state, em, c[0], c[2], c[1], c[3],
                counts.fallbackBlocksByReason(), counts.rdmaBlocksByServer(), e == null ? 0 : e.config().registeredMemoryLimit(),
                e == null ? 0 : e.config().fetchBufferMemory());
    }

    /** This JVM's engine's figures, or null where no engine runs. */
    public static org.rdmashuffle.core.metrics.EngineMetrics engineMetrics() {
        EngineShuffleManager m = current;
        RdmaShuffleEngine e = m == null ? null : m.engine;
        return e == null ? null : e.metrics();
    }

    @Override
    public String engineStartedOn() {
        return startedOn;
    }

    @Override
    public long[] fetchCounts() {
        return counts.snapshot();
    }
}
