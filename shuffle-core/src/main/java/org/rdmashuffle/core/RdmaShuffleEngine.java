package org.rdmashuffle.core;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.function.Function;

import org.rdmashuffle.core.client.BlockFetchListener;
import org.rdmashuffle.core.client.FetchService;
import org.rdmashuffle.core.client.FetchSide;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.server.MapOutputRegistry;
import org.rdmashuffle.core.server.ServeService;
import org.rdmashuffle.core.server.ServedTenant;
import org.rdmashuffle.core.server.ServiceLimits;
import org.rdmashuffle.core.transport.MessageTamper;
import org.rdmashuffle.core.transport.MemoryRegistration;
import org.rdmashuffle.core.transport.TransportContext;
import org.rdmashuffle.verbs.GidChoice;
import org.rdmashuffle.verbs.Verbs;
import org.rdmashuffle.verbs.VerbsProvider;

/**
 * The shuffle engine of one process, engine-neutral: Spark and Hadoop adapters sit on it. A façade
 * that wires and closes three parts:
 * <ul>
 * <li>{@link TransportContext}: the device, the completion pollers and the router that hands each
 *     completion to its connection's owner, the connection table, metadata sends, the timer;
 * <li>{@link ServeService}: the outputs served, by application, the control server, the answering of
 *     fetch requests ({@link MapOutputRegistry} registers a file as a memory region when first asked);
 * <li>{@link FetchService}: an executor's fetches — connections to peers set up through the
 *     authenticated control plane, one {@code PeerFetcher} each, pulling blocks with RDMA_READ chains.
 * </ul>
 * An executor's engine ({@link #start}) is made of all three and serves its own outputs; a node's
 * shuffle service ({@link #startService}) of the first two, serving many applications, each with its
 * own protection domain, so a queue pair of one application cannot read another's memory whatever
 * rkey it names. docs/architecture.md draws the whole path.
 */
public final class RdmaShuffleEngine implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(RdmaShuffleEngine.class.getName());

    /** Test hook: sees and may change every outgoing metadata message (fault-injection tests). */
    interface Tamper extends MessageTamper {
    }

    private final EngineConfig config;
    private final TransportContext transport;
    private final ServeService serving;
    /** An executor's engine's {@link FetchService}; a node's service fetches nothing ({@link FetchSide#none()}). */
    private final FetchSide fetching;
    /** The kernel software device the verbs device is ({@code rxe}, {@code siw}), or "": read once at start. */
    private final String softwareDevice;

    /**
     * @param service false for the engine of one application ({@code appId}, {@code secret}); true for
     *        a node's shuffle service, serving the applications {@code services} knows the secrets and
     *        users of (null: authentication off, each application its own user)
     */
    private RdmaShuffleEngine(EngineConfig config, String appId, byte[] secret, boolean service,
                              ServedApplications services, VerbsProvider provider) {
        config.validate();
        // Before anything of Netty or Kryo runs: a Netty or Kryo of another line would fail later, mid-shuffle.
        DependencyVersions.mismatch().ifPresent(line -> {
            throw new IllegalStateException(line);
        });
        this.config = config;
        Function<String, String> userOf = services == null ? app -> app : services::user;
        byte[] appSecret = secret == null ? null : secret.clone();
        Function<String, byte[]> secrets = service ? (services == null ? null : services::secret)
                : appSecret == null ? null : app -> app.equals(appId) ? appSecret : null;
        ServiceLimits limits = ServiceLimits.of(config);
        this.transport = new TransportContext(config, provider, service, limits.sendDeadline().toMillis());
        ServeService serve = null;
        FetchSide fetch = FetchSide.none();
        try {
            serve = new ServeService(config, limits, transport, service, secrets, userOf);
            if (!service) {
                fetch = new FetchService(config, transport, serve.own().domain(), serve.address(), appId, secret);
            }
            transport.start(serve.tenantIndex());
        } catch (RuntimeException | Error e) {
            transport.markClosed();
            if (serve == null) {
                transport.closeAlone(); // the serving side freed what it had made
            } else {
                EngineShutdown.close(transport, serve, fetch);
            }
            throw e;
        }
        this.serving = serve;
        this.fetching = fetch;
        this.softwareDevice = org.rdmashuffle.verbs.Carrier.ofProvider(provider.name()) == org.rdmashuffle.verbs.Carrier.DEVICE
                ? org.rdmashuffle.verbs.Carrier.softwareDeviceKind(transport.context().queryDevice().vendorId(), deviceName()) : "";
        GidChoice gid = gid();
        LOG.log(System.Logger.Level.INFO, "rdma-shuffle engine on " + provider.name() + ": " + carrier()
                + (gid.index() >= 0 ? ", GID[" + gid.index() + "] " + gid.gid() + " (" + gid.reason() + ")" : "")
                + ", control plane " + serving.address() + ", post path " + config.postPath()
                + (transport.profile().sgeListBroken() ? " (multi-SGE reads via ibv_post_send: rxe sge_list bug)" : "")
                + ", memory " + transport.profile().registration().reason()
                + ", reads " + transport.profile().windows().reason());
        if (transport.profile().windows().refusedWhatWasAskedFor(config)) {
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: " + EngineConfig.KEY_MEMORY_WINDOWS + "=true, but serving "
                    + "reads use " + transport.profile().windows().reason());
        }
    }

    /** Whether this engine's serving connections read through memory windows, and why. */
    public org.rdmashuffle.core.transport.WindowUse windowUse() {
        return transport.profile().windows();
    }

    /** How this engine registers its memory: pinned or on demand (ODP), and why. */
    public MemoryRegistration memoryRegistration() {
        return transport.profile().registration();
    }

    /** Starts an engine on the provider {@code config} names ({@code auto}: libibverbs if usable, the software provider on a host without a device, else none: {@code Verbs#auto}). */
    public static RdmaShuffleEngine start(EngineConfig config, String appId, byte[] secret) {
        return start(config, appId, secret, Verbs.choose(config.provider(), config.providerSettings()).orElseThrow());
    }

    /**
     * Starts an engine on a given provider.
     *
     * @param secret the application's shared secret; null turns authentication off (logged once)
     */
    public static RdmaShuffleEngine start(EngineConfig config, String appId, byte[] secret, VerbsProvider provider) {
        return new RdmaShuffleEngine(config, appId, secret, false, null, provider);
    }

    /**
     * Starts the serving engine of a node's shuffle service (YARN's NodeManager): it serves the outputs
     * of many applications, each reducer only those of the application it authenticated for, and does
     * not fetch. Outputs are registered with {@link #registerMapOutput(String, int, long, Path, long[])}
     * or found by a {@link #resolver}. Each application's resources count against its own bounds,
     * its user's share of the node ({@link ServedApplications#user}) and the node's ({@link ServiceLimits}).
     *
     * @param applications the secrets and users of the applications the node serves (a secret null for
     *        one it does not know); null altogether turns authentication off (logged once): then a
     *        reducer is trusted to name its application, each application its own user
     */
    public static RdmaShuffleEngine startService(EngineConfig config, ServedApplications applications,
                                                 VerbsProvider provider) {
        return new RdmaShuffleEngine(config, null, null, true, applications, provider);
    }

    // ------------------------------------------------------------------ what the engine is

    /** Where peers reach this engine's control plane: what the adapter publishes (e.g. in Spark's BlockManagerId). */
    public InetSocketAddress address() {
        return serving.address();
    }

    /** The GID our queue pairs send from, and why (-1 on InfiniBand). */
    public GidChoice gid() {
        return transport.profile().gid();
    }

    public String providerName() {
        return transport.provider().name();
    }

    public String deviceName() {
        return transport.context().device().name();
    }

    /** Which kernel software device this engine's verbs device is ({@code rxe}, {@code siw}), or "" (hardware, or the software provider). */
    public String softwareDevice() {
        return softwareDevice;
    }

    /**
     * What carries this engine's bytes, in words ({@link org.rdmashuffle.verbs.Carrier#describe}): RDMA over a
     * named device (saying if it is a kernel software device), or the software provider (never called RDMA).
     */
    public String carrier() {
        return org.rdmashuffle.verbs.Carrier.describe(providerName(), deviceName(), softwareDevice);
    }

    public EngineConfig config() {
        return config;
    }

    // ------------------------------------------------------------------ serving

    /**
     * Records a committed map output: its data file and its {@code numPartitions + 1} partition
     * offsets (Spark's index file). Nothing is registered with the device until a reducer asks.
     */
    public void registerMapOutput(int shuffleId, long mapId, Path dataFile, long[] offsets) {
        serving.registerMapOutput(shuffleId, mapId, dataFile, offsets);
    }

    /**
     * Forgets a shuffle: its outputs here (their regions deregistered), and the layouts of its outputs
     * that other engines sent us.
     */
    public void unregisterShuffle(int shuffleId) {
        serving.unregisterShuffle(shuffleId);
        fetching.forgetLayouts(shuffleId);
    }

    /**
     * A shuffle service's {@link #registerMapOutput(int, long, Path, long[])}: an output of application
     * {@code app}, in a file this process trusts (the caller names it, not a reducer).
     */
    public void registerMapOutput(String app, int shuffleId, long mapId, Path dataFile, long[] offsets) {
        serving.registerMapOutput(app, shuffleId, mapId, dataFile, offsets);
    }

    /**
     * A shuffle service forgets an application: it is refused from now on (a CONNECT on a control
     * connection of its, or a new one), its control connections close, and its reducers' connections,
     * outputs' regions and protection domain are freed on the engine's stopper thread — never on the
     * caller's (YARN's dispatcher), which returns at once, whatever the application's peers do. Returns
     * how many outputs it had here.
     */
    public int unregisterApplication(String app) {
        return serving.unregisterApplication(app);
    }

    /** Applications stopped whose resources are still being freed (tests watch it reach 0). */
    public int stopsUnderWay() {
        return serving.stopsUnderWay();
    }

    /**
     * Who finds outputs nobody registered with this engine, when a reducer first asks for one: for a
     * shuffle service, applications' outputs on the node's disks (MapReduce's, Spark's); for an
     * executor's engine (asked with application {@link MapOutputRegistry#OWN}), outputs another
     * executor moved to this one when it was decommissioned.
     */
    public void resolver(MapOutputRegistry.Resolver resolver) {
        serving.resolver(resolver);
    }

    /**
     * Map outputs this engine knows now, across applications: those registered with it and those found
     * on disk, whether or not a reducer has asked for them yet (what a failed map attempt must not add).
     */
    public int mapOutputs() {
        return serving.mapOutputs();
    }

    /** Applications with resources on this engine now (an executor's engine: 1, its own). */
    public int tenants() {
        return serving.tenants();
    }

    // ------------------------------------------------------------------ fetching

    /**
     * Fetches blocks from the engine at {@code peer}. Returns at once, also the first time: the
     * connection is then set up on a dialer thread; with {@code handOffFetches} (the software provider's
     * default) the requests and reads are made on the submitter's thread, not this one. Every block gets
     * exactly one listener call: from a poller thread; from a dialer thread if the connection cannot be
     * set up; from the thread that runs the call (the submitter's, or this one) for an empty block of an
     * output whose layout is known, and for every block if the engine is closed or serves only. The
     * engine reads {@code blocks} after the call returns (no copy per call): the caller must not change it.
     */
    public void fetchBlocks(InetSocketAddress peer, List<BlockId> blocks, BlockFetchListener listener) {
        if (!blocks.isEmpty()) {
            fetching.fetchBlocks(peer, blocks, listener);
        }
    }

    /**
     * Starts connecting to these peers before their blocks are asked for; this engine's own address
     * and peers already connected are skipped. Returns at once; a peer that cannot be reached is
     * reported by the first fetch from it.
     */
    public void connectAhead(Collection<InetSocketAddress> peers) {
        fetching.connectAhead(peers);
    }

    /**
     * The adapter says a map output is lost (a fetch of it failed and the map will run again): its
     * layout, wherever a peer sent it, is not used again; its blocks are asked for afresh.
     */
    public void forgetOutput(int shuffleId, long mapId) {
        fetching.forgetOutput(shuffleId, mapId);
    }

    public EngineCounters counters() {
        FetchSide.FetchCounters f = fetching.counters();
        return new EngineCounters(f.connections(), transport.connections().servingCount(), f.controlConnections(),
                f.awaitingRequests(), f.queuedReads(), f.chainsInFlight(), f.readRequestsInFlight(),
                transport.sender().outstanding(serving.tenantIndex().domains()), f.outstandingBuffers(), f.bytesInFlight(),
                f.peakBytesInFlight(), f.readRequestsPosted(), f.blocksRead(), serving.registeredBytes(),
                serving.postedReceives(), transport.lowWaterEvents(), transport.completions(), transport.pollerSleeps(),
                transport.connections().servingQueuePairs() + f.queuePairs(), f.layoutCacheBytes());
    }

    /** What operators' metrics systems publish of this engine (issue 36), read now; totals since start. */
    public org.rdmashuffle.core.metrics.EngineMetrics metrics() {
        GidChoice g = gid();
        var figures = serving.tenantFigures();
        return new org.rdmashuffle.core.metrics.EngineMetrics(providerName(), deviceName(), softwareDevice,
                g.index() >= 0 ? "GID[" + g.index() + "] " + g.gid() : "", memoryRegistration().reason(),
                transport.pinnableBytes(), fetching.fetchMetrics(), figures.registrations(),
                fetching.bufferRegistrations(), figures.served(), figures.servedByApplication(), transport.completionErrors(),
                counters());
    }

    // ------------------------------------------------------------------ test hooks

    void tamper(Tamper t) {
        transport.sender().tamper(t);
    }

    void failFetchBufferRegistrations(RuntimeException fault) {
        ((FetchService) fetching).failFetchBufferRegistrations(fault); // an executor's engine's: the tests' own
    }

    /** Tests: the tenant of an application now, or null. */
    ServedTenant tenantOf(String app) {
        return serving.find(app);
    }

    /** Tests: what the serving side counts by number (connections, waiting requests, tenants, windows), by application and user. */
    org.rdmashuffle.core.server.ServiceUsage usage() {
        return serving.usage();
    }

    /** Tests: {@code hook} runs in each serving queue-pair set-up, before its connection joins its tenant. */
    void duringServingSetUps(Runnable hook) {
        serving.duringSetUps(hook);
    }

    /** Tests: {@code hook} runs after each serving set-up let go of its tenant, before its connection is tied to its session. */
    void afterServingSetUps(Runnable hook) {
        serving.afterSetUps(hook);
    }

    /** Tests: the registered-memory budget the serving side's tenants draw on (map outputs, and a service's tenants' pools). */
    org.rdmashuffle.core.server.RegistryBudget registeredMemoryBudget() {
        return serving.tenantFigures().registeredMemory();
    }

    /** Tests: tasks waiting on the engine's timer (its own ticks among them). */
    int timerTasks() {
        return transport.timerTasks();
    }

    /** Tests: the timer's periodic ticks run since the start (an engine with nothing to fetch or serve runs none). */
    long ticksRun() {
        return transport.ticksRun();
    }

    /** Tests: the most metadata sends one tenant has had waiting for a send slot at once. */
    int peakQueuedSends() {
        return transport.sender().peakQueued();
    }

    // ------------------------------------------------------------------ shutdown

    /**
     * Fails every fetch still under way, destroys every connection and frees every device resource.
     * Bounded: nothing here waits on a peer.
     */
    @Override
    public void close() {
        if (transport.markClosed()) {
            EngineShutdown.close(transport, serving, fetching);
        }
    }
}
