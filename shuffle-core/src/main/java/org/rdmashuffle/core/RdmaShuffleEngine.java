package org.rdmashuffle.core;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import org.rdmashuffle.core.buffer.RegisteredBufferPool;
import org.rdmashuffle.core.client.BlockFetchException;
import org.rdmashuffle.core.client.BlockFetchListener;
import org.rdmashuffle.core.client.FetchBudget;
import org.rdmashuffle.core.client.FetchTransport;
import org.rdmashuffle.core.client.PeerFetcher;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.control.ControlClientPool;
import org.rdmashuffle.core.control.ControlServer;
import org.rdmashuffle.core.control.ControlSession;
import org.rdmashuffle.core.protocol.ConnectCodec;
import org.rdmashuffle.core.protocol.MalformedMessageException;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.protocol.MessageCodec;
import org.rdmashuffle.core.server.FetchRequestHandler;
import org.rdmashuffle.core.server.MapOutputRegistry;
import org.rdmashuffle.core.server.RegisteredMemoryBudget;
import org.rdmashuffle.core.transport.CompletionPoller;
import org.rdmashuffle.core.transport.DataConnection;
import org.rdmashuffle.core.transport.MessageTamper;
import org.rdmashuffle.core.transport.MetadataSender;
import org.rdmashuffle.core.transport.TenantDomain;
import org.rdmashuffle.core.transport.ProviderQuirks;
import org.rdmashuffle.core.transport.ReceivePool;
import org.rdmashuffle.core.transport.WorkRequestIds;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.AsyncEvent;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.DeviceAttributes;
import org.rdmashuffle.verbs.GidEntry;
import org.rdmashuffle.verbs.GidType;
import org.rdmashuffle.verbs.LinkLayer;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.PortAttributes;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.QueuePairEndpoint;
import org.rdmashuffle.verbs.SendOps;
import org.rdmashuffle.verbs.Verbs;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsDevice;
import org.rdmashuffle.verbs.VerbsProvider;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkCompletions;

/**
 * The shuffle engine of one process, engine-neutral: Spark and Hadoop adapters sit on it.
 *
 * <p>Serving side: {@link #registerMapOutput} records a committed output; a reducer's FetchRequest
 * arriving over SEND/RECV is answered with (address, length, rkey) per block, the file being
 * registered as a memory region on first use ({@link MapOutputRegistry}). The completion poller
 * answers requests whose outputs are known and registered; the others (an output to find on disk,
 * a file to register) go to {@code serverThreads} threads, so slow work never stalls completions.
 *
 * <p>Fetching side: {@link #fetchBlocks} sets up (or reuses) the data connection to the peer through
 * the authenticated control plane, then a {@link PeerFetcher} asks for descriptors and pulls the
 * blocks with RDMA_READ chains; {@link CompletionPoller} threads dispatch completions to it.
 *
 * <p>Device resources are per application ({@link TenantDomain}: protection domain, shared receive
 * queue with its {@link ReceivePool}, send buffers, map-output regions), so a queue pair of one
 * application cannot read another's memory whatever rkey it names: an executor's engine has one, its
 * own; a node's shuffle service one per application it serves. Shared by all: the fetch buffers (an
 * executor's engine only), {@code pollerThreads} completion queues and the control plane. Metadata
 * sends go through {@link MetadataSender}. docs/architecture.md draws the whole path.
 */
public final class RdmaShuffleEngine implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(RdmaShuffleEngine.class.getName());
    private static final int MAX_CONTROL_FRAME = 64 << 10;
    /** Largest encoded descriptor (varints at their longest) and block id of a request. */
    private static final int MAX_DESCRIPTOR_BYTES = 58;
    private static final int MAX_REQUESTED_BLOCK_BYTES = 20;
    private static final int FETCH_BUFFER_CHUNK = 4 << 20;
    /**
     * RNR NAK timer our QPs ask a sender to wait (IB encoding 28: 163.84 ms): with {@link
     * #SERVING_RNR_RETRY} retries a server waits about a second for a reducer to post a receive.
     */
    private static final int MIN_RNR_TIMER = 28;
    private static final int SERVING_RNR_RETRY = 6;

    /** Test hook: sees and may change every outgoing metadata message (fault-injection tests). */
    interface Tamper extends MessageTamper {
    }

    private final EngineConfig config;
    private final VerbsProvider provider;
    private final VerbsContext context;
    /** Fetching QPs: RNR retried for as long as the QP lives (the server answers only what we asked for). */
    private final ConnectOptions options;
    /**
     * Serving QPs: a finite RNR retry, so a reducer that never posts receives fails its own connection
     * instead of holding the server's send slots for ever.
     */
    private final ConnectOptions servingOptions;
    private final boolean sgeListBroken;
    private final int maxReadSge;
    private final int maxSendWr;
    private final int cqEntries;
    private final CompletionPoller[] pollers;
    /** An executor's engine: its own application's resources; null in a shuffle service. */
    private final TenantDomain own;
    /** Tenants by application and by index (the index is in receive wr_ids); guarded by {@code tenantsByApp}. */
    private final Map<String, TenantDomain> tenantsByApp = new java.util.HashMap<>();
    private final Map<Integer, TenantDomain> tenants = new ConcurrentHashMap<>();
    private final AtomicInteger tenantIds = new AtomicInteger();
    /** Map-output bytes registered across tenants: registeredMemoryLimit bounds the node, not each application. */
    private final RegisteredMemoryBudget registeredMemory;
    private volatile MapOutputRegistry.Resolver resolver;
    private final MetadataSender sender;
    /** Buffers reads land in: an executor's engine only (a shuffle service does not fetch). */
    private final RegisteredBufferPool fetchBuffers;
    private final FetchBudget budget;
    /** Answer the fetch requests the poller cannot answer at once. */
    private final ExecutorService servers;
    private final ControlServer controlServer;
    private final ControlClientPool controlClients;
    private final ScheduledExecutorService timer;
    private final ThreadLocal<MessageCodec> codec;
    private final AtomicLong ids = new AtomicLong();
    private final AtomicLong lowWaterEvents = new AtomicLong();
    private final Thread asyncEvents;
    private final Map<Integer, DataConnection> byQpNumber = new ConcurrentHashMap<>();
    private final Map<InetSocketAddress, PeerFetcher> fetchers = new ConcurrentHashMap<>();
    private final Map<InetSocketAddress, Object> connecting = new ConcurrentHashMap<>();
    private final Set<DataConnection> serving = ConcurrentHashMap.newKeySet();
    private final FetchTransport transport = new Transport();
    private final boolean servesManyApplications;
    private volatile boolean closed;
    private int nextPoller;

    private RdmaShuffleEngine(EngineConfig config, String appId, byte[] secret, VerbsProvider provider) {
        this(config, appId, secret, false, null, provider);
    }

    /**
     * @param service false for the engine of one application ({@code appId}, {@code secret}); true for
     *        a node's shuffle service, serving the applications {@code services} knows the secrets of
     *        (null: authentication off)
     */
    private RdmaShuffleEngine(EngineConfig config, String appId, byte[] secret, boolean service,
                              Function<String, byte[]> services, VerbsProvider provider) {
        config.validate();
        this.config = config;
        this.provider = provider;
        this.context = openDevice(provider, config.device());
        List<AutoCloseable> made = new ArrayList<>();
        try {
            DeviceAttributes device = context.queryDevice();
            PortAttributes port = context.queryPort(config.port());
            if (!port.isActive()) {
                throw new IllegalStateException("port " + config.port() + " of " + context.device().name() + " is "
                        + port.state() + ", not ACTIVE");
            }
            this.options = connectOptions(config, context, device, port);
            this.servingOptions = options.withRnrRetry(SERVING_RNR_RETRY);
            this.sgeListBroken = ProviderQuirks.builderSgeListBroken(context);
            this.maxReadSge = Math.max(1, Math.min(16, device.maxSgeRd() > 0 ? device.maxSgeRd() : device.maxSge()));
            this.maxSendWr = Math.min(device.maxQpWr() > 0 ? device.maxQpWr() : Integer.MAX_VALUE,
                    config.maxChainsInFlightPerPeer() * config.chainLength() + config.sendBuffers());
            this.cqEntries = Math.min(device.maxCqe() > 0 ? device.maxCqe() : 1 << 16, 1 << 15);
            // A queue pair entering ERR flushes every outstanding request, signaled or not, so the
            // process-wide chain bound keeps a flush of everything inside one completion queue.
            int maxChains = Math.max(1, (cqEntries - config.receiveBuffers() - config.sendBuffers()) / config.chainLength());
            this.budget = new FetchBudget(config.maxBytesInFlight(), maxChains);
            this.pollers = new CompletionPoller[config.pollerThreads()];
            for (int i = 0; i < pollers.length; i++) {
                pollers[i] = new CompletionPoller(context, "rdma-shuffle-poller-" + i, cqEntries, 64, config.busyPoll(),
                        this::onCompletions);
                CompletionPoller p = pollers[i];
                made.add(p::close);
            }
            this.servesManyApplications = service;
            this.registeredMemory = new RegisteredMemoryBudget(config.registeredMemoryLimit());
            // An executor's engine has one tenant, its own; a service makes one per application as they come.
            this.own = service ? null : new TenantDomain(context, tenantIds.getAndIncrement(), MapOutputRegistry.OWN, config,
                    config.fetchTimeout().toMillis(), registeredMemory);
            if (own != null) {
                tenants.put(own.index(), own);
                tenantsByApp.put(own.app(), own);
                made.add(own);
            }
            this.timer = Executors.newSingleThreadScheduledExecutor(r -> Thread.ofPlatform().daemon()
                    .name("rdma-shuffle-timer").unstarted(r));
            made.add(timer::shutdownNow);
            // Exactly fetchBufferMemory: registered in chunks of 4 MiB, or of the largest power of two it holds if less.
            this.fetchBuffers = own == null ? null : new RegisteredBufferPool(own.pd(), config.fetchBufferMemory(),
                    (int) Math.min(FETCH_BUFFER_CHUNK, Long.highestOneBit(config.fetchBufferMemory())), this::onFetchBufferReleased);
            if (fetchBuffers != null) {
                made.add(fetchBuffers);
            }
            AtomicInteger serverIds = new AtomicInteger();
            this.servers = Executors.newFixedThreadPool(config.serverThreads(), r -> Thread.ofPlatform().daemon()
                    .name("rdma-shuffle-server-" + serverIds.getAndIncrement()).unstarted(r));
            made.add(servers::shutdownNow);
            int decodeBound = config.receiveBufferSize();
            this.codec = ThreadLocal.withInitial(() -> new MessageCodec(decodeBound));
            this.sender = new MetadataSender(ids, decodeBound, new MetadataSender.Listener() {
                @Override
                public void connectionFailed(DataConnection c, Throwable cause) {
                    RdmaShuffleEngine.this.connectionFailed(c, cause);
                }

                @Override
                public void retire(DataConnection c) {
                    RdmaShuffleEngine.this.retire(c);
                }
            });
            this.controlClients = new ControlClientPool(secret, appId, MAX_CONTROL_FRAME, config.connectTimeout());
            made.add(controlClients);
            byte[] appSecret = secret == null ? null : secret.clone();
            Function<String, byte[]> secrets = service ? services
                    : appSecret == null ? null : app -> app.equals(appId) ? appSecret : null;
            this.controlServer = new ControlServer(new InetSocketAddress(config.bindAddress(), config.controlPort()),
                    secrets, this::onControlRequest, MAX_CONTROL_FRAME);
            made.add(controlServer);
            for (CompletionPoller p : pollers) {
                p.start();
            }
            this.asyncEvents = Thread.ofPlatform().daemon().name("rdma-shuffle-async-events").start(this::watchAsyncEvents);
            timer.scheduleWithFixedDelay(this::tick, 200, 200, TimeUnit.MILLISECONDS);
        } catch (RuntimeException | Error e) {
            for (int i = made.size() - 1; i >= 0; i--) {
                try {
                    made.get(i).close();
                } catch (Exception suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            context.close();
            throw e;
        }
        LOG.log(System.Logger.Level.INFO, "rdma-shuffle engine on " + provider.name() + " device " + context.device().name()
                + ", control plane " + controlServer.address() + ", post path " + config.postPath()
                + (sgeListBroken ? " (multi-SGE reads via ibv_post_send: rxe sge_list bug)" : ""));
    }

    /** Starts an engine on the provider {@code config} names ({@code auto} picks libibverbs if usable, else software). */
    public static RdmaShuffleEngine start(EngineConfig config, String appId, byte[] secret) {
        return new RdmaShuffleEngine(config, appId, secret, Verbs.choose(config.provider()).orElseThrow());
    }

    /**
     * Starts an engine on a given provider.
     *
     * @param secret the application's shared secret; null turns authentication off (logged once)
     */
    public static RdmaShuffleEngine start(EngineConfig config, String appId, byte[] secret, VerbsProvider provider) {
        return new RdmaShuffleEngine(config, appId, secret, provider);
    }

    /**
     * Starts the serving engine of a node's shuffle service (YARN's NodeManager): it serves the outputs
     * of many applications, each reducer only those of the application it authenticated for, and does
     * not fetch. Outputs are registered with {@link #registerMapOutput(String, int, long, Path, long[])}
     * or found by a {@link #resolver}.
     *
     * @param secrets the shared secret of an application the node knows, null for one it does not;
     *        null altogether turns authentication off (logged once): then a reducer is trusted to name
     *        its application
     */
    public static RdmaShuffleEngine startService(EngineConfig config, Function<String, byte[]> secrets,
                                                 VerbsProvider provider) {
        return new RdmaShuffleEngine(config, null, null, true, secrets, provider);
    }

    private static VerbsContext openDevice(VerbsProvider provider, String name) {
        List<VerbsDevice> devices = provider.devices();
        for (VerbsDevice d : devices) {
            if (name == null || d.name().equals(name)) {
                return d.open();
            }
        }
        throw new IllegalStateException(provider.name() + " has no device " + (name == null ? "at all" : name)
                + " (devices: " + devices.stream().map(VerbsDevice::name).toList() + ")");
    }

    /** Port, GID and MTU of this device, and as many outstanding reads as the device allows (like perftest). */
    private static ConnectOptions connectOptions(EngineConfig config, VerbsContext ctx, DeviceAttributes device,
                                                 PortAttributes port) {
        int gid = config.gidIndex() >= 0 ? config.gidIndex() : chooseGid(ctx, port);
        Mtu mtu = port.activeMtu() == null ? Mtu.MTU_1024 : Mtu.min(Mtu.MTU_4096, port.activeMtu());
        int initiator = device.maxQpInitRdAtomic() > 0 ? device.maxQpInitRdAtomic() : 16;
        int responder = device.maxQpRdAtomic() > 0 ? device.maxQpRdAtomic() : 16;
        ConnectOptions d = ConnectOptions.defaults(config.port(), gid, mtu);
        return new ConnectOptions(d.portNumber(), d.gidIndex(), d.mtu(), Access.REMOTE_READ, Math.min(initiator, 255),
                Math.min(responder, 255), MIN_RNR_TIMER, d.timeout(), d.retryCount(), 7);
    }

    /** A RoCE v2 IPv4 GID if there is one (what rxe and most RoCE fabrics route), else the first; LID on InfiniBand. */
    static int chooseGid(VerbsContext ctx, PortAttributes port) {
        if (port.linkLayer() == LinkLayer.INFINIBAND) {
            return -1;
        }
        int fallback = -1;
        for (int i = 0; i < port.gidTableLength(); i++) {
            GidEntry e = ctx.queryGid(port.portNumber(), i);
            if (e == null || e.gid().isZero()) {
                continue;
            }
            if (e.type() == GidType.ROCE_V2 && e.gid().isIpv4Mapped()) {
                return i;
            }
            if (fallback < 0) {
                fallback = i;
            }
        }
        return Math.max(fallback, 0);
    }

    // ------------------------------------------------------------------ public API

    /** Where peers reach this engine's control plane: what the adapter publishes (e.g. in Spark's BlockManagerId). */
    public InetSocketAddress address() {
        return controlServer.address();
    }

    public String providerName() {
        return provider.name();
    }

    public String deviceName() {
        return context.device().name();
    }

    public EngineConfig config() {
        return config;
    }

    /**
     * Records a committed map output: its data file and its {@code numPartitions + 1} partition
     * offsets (Spark's index file). Nothing is registered with the device until a reducer asks.
     */
    public void registerMapOutput(int shuffleId, long mapId, Path dataFile, long[] offsets) {
        requireOwn().registry().register(shuffleId, mapId, dataFile, offsets);
    }

    /** Forgets a shuffle's outputs and deregisters their regions. */
    public void unregisterShuffle(int shuffleId) {
        requireOwn().registry().unregisterShuffle(shuffleId);
    }

    /**
     * A shuffle service's {@link #registerMapOutput(int, long, Path, long[])}: an output of application
     * {@code app}, in a file this process trusts (the caller names it, not a reducer).
     */
    public void registerMapOutput(String app, int shuffleId, long mapId, Path dataFile, long[] offsets) {
        requireService();
        tenant(app).registry().register(app, shuffleId, mapId, dataFile, offsets);
    }

    /**
     * A shuffle service forgets an application: its reducers' connections end, its outputs' regions
     * are deregistered and its protection domain freed. Returns how many outputs it had here.
     */
    public int unregisterApplication(String app) {
        requireService();
        TenantDomain t;
        synchronized (tenantsByApp) {
            t = tenantsByApp.remove(app);
        }
        if (t == null) {
            return 0;
        }
        int outputs = t.registry().mapOutputs();
        closeTenant(t);
        return outputs;
    }

    /** A shuffle service finds outputs nobody registered with this (MapReduce's, on the node's disks). */
    public void resolver(MapOutputRegistry.Resolver resolver) {
        requireService();
        this.resolver = resolver;
        synchronized (tenantsByApp) {
            for (TenantDomain t : tenantsByApp.values()) {
                t.registry().resolver(resolver);
            }
        }
    }

    /** Applications with resources on this engine now (an executor's engine: 1, its own). */
    public int tenants() {
        return tenants.size();
    }

    private TenantDomain requireOwn() {
        if (own == null) {
            throw new IllegalStateException("a shuffle service's engine serves applications' outputs: name the application");
        }
        return own;
    }

    /**
     * The tenant of {@code app}, made at its first output or connection. Admitted only while every
     * tenant's receives and sends still fit a completion queue, which all of them may complete into.
     */
    private TenantDomain tenant(String app) {
        if (own != null) {
            return own;
        }
        synchronized (tenantsByApp) {
            if (closed) {
                throw new IllegalStateException("the engine is closing");
            }
            TenantDomain t = tenantsByApp.get(app);
            if (t != null) {
                return t;
            }
            int perTenant = config.receiveBuffers() + config.sendBuffers();
            if ((long) (tenantsByApp.size() + 1) * perTenant > cqEntries) {
                throw new IllegalStateException("already serving " + tenantsByApp.size() + " applications: their "
                        + perTenant + " receive and send buffers each fill the " + cqEntries + "-entry completion queue ("
                        + EngineConfig.KEY_RECEIVE_BUFFERS + ", " + EngineConfig.KEY_SEND_BUFFERS + ")");
            }
            t = new TenantDomain(context, tenantIds.getAndIncrement(), app, config, config.fetchTimeout().toMillis(), registeredMemory);
            t.registry().resolver(resolver);
            tenants.put(t.index(), t);
            tenantsByApp.put(app, t);
            return t;
        }
    }

    /** Ends a tenant: its connections (QPs) first, then its SRQ, regions and PD. */
    private void closeTenant(TenantDomain t) {
        for (DataConnection c : new ArrayList<>(t.connections())) {
            retire(c);
        }
        tenants.remove(t.index());
        t.close();
    }

    private void requireService() {
        if (!servesManyApplications) {
            throw new IllegalStateException("only a shuffle service's engine (startService) serves other applications");
        }
    }

    /**
     * Fetches blocks from the engine at {@code peer}. Returns at once (after setting up the connection,
     * the first time); every block gets exactly one listener call, from a poller thread, or from this
     * thread if the connection cannot be set up.
     */
    public void fetchBlocks(InetSocketAddress peer, List<BlockId> blocks, BlockFetchListener listener) {
        if (blocks.isEmpty()) {
            return;
        }
        PeerFetcher f;
        try {
            requireOwn();
            f = fetcher(peer);
        } catch (IOException | RuntimeException e) {
            BlockFetchException failure = new BlockFetchException(label(peer), blocks, connectFailure(e),
                    "cannot connect: " + e.getMessage(), e);
            for (BlockId b : blocks) {
                try {
                    listener.onBlockFetchFailure(b, failure);
                } catch (RuntimeException ex) {
                    LOG.log(System.Logger.Level.WARNING, "block fetch listener failed on the failure of " + b, ex);
                }
            }
            return;
        }
        f.fetch(blocks, listener);
    }

    /** Refused at the handshake, or not reached at all (the control client says which by its exception). */
    private static BlockFetchException.Kind connectFailure(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof org.rdmashuffle.core.control.AuthenticationException) {
                return BlockFetchException.Kind.NOT_AUTHENTICATED;
            }
        }
        return BlockFetchException.Kind.UNREACHABLE;
    }

    public EngineCounters counters() {
        int awaiting = 0;
        int queued = 0;
        int chains = 0;
        int wrs = 0;
        for (PeerFetcher f : fetchers.values()) {
            awaiting += f.awaitingRequests();
            queued += f.queuedReads();
            chains += f.chainsInFlight();
            wrs += f.readRequestsInFlight();
        }
        List<TenantDomain> all = new ArrayList<>(tenants.values());
        long completions = 0;
        long sleeps = 0;
        for (CompletionPoller p : pollers) {
            completions += p.completed();
            sleeps += p.sleeps();
        }
        int posted = 0;
        long registered = 0;
        for (TenantDomain t : all) {
            synchronized (t.receivePool()) {
                posted += t.isClosed() ? 0 : t.receivePool().posted();
            }
            registered += t.registry().registeredBytes();
        }
        return new EngineCounters(fetchers.size(), serving.size(), controlClients.openConnections(), awaiting, queued, chains,
                wrs, sender.outstanding(all), fetchBuffers == null ? 0 : fetchBuffers.outstanding(), budget.bytesInFlight(),
                budget.peakBytesInFlight(), budget.readRequestsPosted(), budget.blocksRead(),
                registered, posted, lowWaterEvents.get(), completions, sleeps);
    }

    void tamper(Tamper t) {
        sender.tamper(t);
    }

    // ------------------------------------------------------------------ connections

    private PeerFetcher fetcher(InetSocketAddress peer) throws IOException {
        if (closed) {
            throw new IllegalStateException("the engine is closed");
        }
        PeerFetcher f = usable(peer);
        if (f != null) {
            return f;
        }
        synchronized (connecting.computeIfAbsent(peer, p -> new Object())) {
            f = usable(peer);
            if (f == null) {
                f = connect(peer);
                fetchers.put(peer, f);
            }
            return f;
        }
    }

    /** The live fetcher of {@code peer}; one whose connection or control connection died is failed and dropped. */
    private PeerFetcher usable(InetSocketAddress peer) {
        PeerFetcher f = fetchers.get(peer);
        if (f == null) {
            return null;
        }
        if (!f.isFailed() && controlClients.isConnected(peer)) {
            return f;
        }
        // The peer's side of the data connection ended with its control connection.
        f.fail(new IOException("the control connection to " + label(peer) + " was lost"));
        fetchers.remove(peer, f);
        return null;
    }

    private PeerFetcher connect(InetSocketAddress peer) throws IOException {
        int n = config.qpsPerPeer();
        QueuePair[] qps = new QueuePair[n];
        ConnectCodec.Connect theirs;
        try {
            List<QueuePairEndpoint> mine = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                qps[i] = createQueuePair(own);
                mine.add(qps[i].localEndpoint(options));
            }
            byte[] reply = controlClients.call(peer, ConnectCodec.CONNECT,
                    ConnectCodec.encode(new ConnectCodec.Connect(config.receiveBufferSize(), mine)));
            theirs = ConnectCodec.decode(reply);
            if (theirs.endpoints().size() != n) {
                throw new MalformedMessageException(n + " queue pairs asked, " + theirs.endpoints().size() + " answered");
            }
            for (int i = 0; i < n; i++) {
                qps[i].connect(theirs.endpoints().get(i), options);
            }
        } catch (IOException | RuntimeException e) {
            closeAll(qps);
            if (e instanceof IOException io) {
                throw io;
            }
            throw new IOException("cannot set up a data connection to " + label(peer) + ": " + e.getMessage(), e);
        }
        DataConnection c = new DataConnection(label(peer), DataConnection.Role.FETCHING, own, theirs.receiveBufferSize(), qps,
                config.postPath(), config.chainLength(), maxReadSge, sgeListBroken);
        int perRequest = Math.max(1, Math.min(MessageCodec.MAX_ITEMS, Math.min(
                (theirs.receiveBufferSize() - 32) / MAX_REQUESTED_BLOCK_BYTES, (config.receiveBufferSize() - 32) / MAX_DESCRIPTOR_BYTES)));
        long maxChainBytes = Math.max(256 << 10, config.maxBytesInFlightPerPeer() / config.maxChainsInFlightPerPeer());
        PeerFetcher f = new PeerFetcher(c, transport, new PeerFetcher.Limits(config.chainLength(), maxReadSge, maxChainBytes,
                config.maxBytesInFlightPerPeer(), config.maxChainsInFlightPerPeer(), perRequest, config.fetchTimeout().toNanos()));
        c.attach(f);
        for (int i = 0; i < n; i++) {
            byQpNumber.put(c.qpNumber(i), c);
        }
        return f;
    }

    /** A queue pair on the tenant's PD, receiving into its SRQ; completion queues are shared round-robin. */
    private QueuePair createQueuePair(TenantDomain tenant) {
        CompletionPoller p;
        synchronized (this) {
            p = pollers[nextPoller];
            nextPoller = (nextPoller + 1) % pollers.length;
        }
        QueuePairConfig qc = new QueuePairConfig(p.completionQueue(), p.completionQueue(), tenant.srq(), maxSendWr, 1, maxReadSge,
                1, 0, false);
        if (config.postPath() == EngineConfig.PostPath.BUILDER) {
            qc = qc.withSendOps(SendOps.RDMA_READ | SendOps.SEND);
        }
        return tenant.pd().createQueuePair(qc);
    }

    private static void closeAll(QueuePair[] qps) {
        for (QueuePair qp : qps) {
            if (qp != null) {
                try {
                    qp.close();
                } catch (RuntimeException ignored) {
                    // best effort on a failed setup
                }
            }
        }
    }

    /** The control-plane request of a peer that wants to fetch from us: queue pairs for it, connected to its own. */
    private byte[] onControlRequest(ControlSession session, byte type, byte[] payload) {
        if (type != ConnectCodec.CONNECT) {
            throw new IllegalArgumentException("unknown control request " + type);
        }
        if (closed) {
            throw new IllegalStateException("the engine is closing");
        }
        ConnectCodec.Connect theirs = ConnectCodec.decode(payload);
        if (serving.size() >= config.maxServedConnections()) {
            throw new IllegalStateException("already serving " + serving.size() + " connections (maxServedConnections)");
        }
        // The application this reducer authenticated for; its QPs go on that application's PD.
        TenantDomain tenant = tenant(session.appId());
        int n = theirs.endpoints().size();
        if (n > config.qpsPerPeer()) { // the server sizes its resources, never the peer
            throw new IllegalArgumentException("a reducer asked for " + n + " queue pairs; this server allows "
                    + config.qpsPerPeer() + " per connection (" + EngineConfig.KEY_QPS_PER_PEER + ")");
        }
        QueuePair[] qps = new QueuePair[n];
        List<QueuePairEndpoint> mine = new ArrayList<>(n);
        try {
            for (int i = 0; i < n; i++) {
                qps[i] = createQueuePair(tenant);
                qps[i].connect(theirs.endpoints().get(i), servingOptions);
                mine.add(qps[i].localEndpoint(servingOptions));
            }
        } catch (RuntimeException e) {
            closeAll(qps);
            throw e;
        }
        DataConnection c = new DataConnection(session.remoteAddress() + " (" + session.appId() + ")",
                DataConnection.Role.SERVING, tenant, theirs.receiveBufferSize(), qps, config.postPath(), 1, 1, sgeListBroken);
        serving.add(c);
        tenant.connections().add(c);
        for (int i = 0; i < n; i++) {
            byQpNumber.put(c.qpNumber(i), c);
        }
        if (tenant.isClosed()) { // the application ended meanwhile
            retire(c);
            throw new IllegalStateException("application " + session.appId() + " has ended");
        }
        session.onClose(() -> retire(c));
        return ConnectCodec.encode(new ConnectCodec.Connect(config.receiveBufferSize(), mine));
    }

    /** Destroys a connection's queue pairs and forgets it; sends it still had in flight give their buffers back. */
    private void retire(DataConnection c) {
        for (int i = 0; i < c.queuePairs(); i++) {
            byQpNumber.remove(c.qpNumber(i), c);
        }
        c.close();
        serving.remove(c);
        c.tenant().connections().remove(c);
        if (c.attachment() instanceof PeerFetcher f) {
            for (Map.Entry<InetSocketAddress, PeerFetcher> e : fetchers.entrySet()) {
                if (e.getValue() == f && fetchers.remove(e.getKey(), f)) {
                    // The peer's queue pairs for us live as long as our control connection: end both.
                    controlClients.disconnect(e.getKey());
                }
            }
        }
        sender.forget(c);
    }

    private static String label(InetSocketAddress peer) {
        return peer.getHostString() + ":" + peer.getPort();
    }

    // ------------------------------------------------------------------ metadata messages

    private void send(DataConnection c, Message m, boolean closeAfter) {
        sender.send(c, m, closeAfter);
    }

    // ------------------------------------------------------------------ completions

    private void onCompletions(WorkCompletions wcs, int n) {
        for (int i = 0; i < n; i++) {
            long wrId = wcs.wrId(i);
            switch (WorkRequestIds.kind(wrId)) {
                case WorkRequestIds.RECEIVE -> onReceive(wcs, i, wrId);
                case WorkRequestIds.SEND -> onSendCompleted(wcs, i, WorkRequestIds.value(wrId));
                case WorkRequestIds.READ -> onReadCompleted(wcs, i, WorkRequestIds.value(wrId));
                default -> LOG.log(System.Logger.Level.WARNING, "completion with unknown wr_id 0x" + Long.toHexString(wrId));
            }
        }
    }

    private void onReceive(WorkCompletions wcs, int i, long slot) {
        TenantDomain tenant = tenants.get(TenantDomain.tenantOf(slot));
        if (tenant == null) {
            return; // a flushed receive of a tenant closed since: its pool is gone
        }
        ReceivePool receivePool = tenant.receivePool();
        synchronized (receivePool) {
            if (tenant.isClosed()) {
                return;
            }
            receivePool.consumed();
        }
        try {
            DataConnection c = byQpNumber.get(wcs.qpNumber(i));
            if (!wcs.isSuccess(i)) {
                if (c != null && wcs.status(i) != WorkCompletionStatus.WR_FLUSH_ERR) {
                    connectionFailed(c, new IOException("a receive failed with " + wcs.status(i) + " (a message over the "
                            + config.receiveBufferSize() + "-byte receive buffer, " + EngineConfig.KEY_RECEIVE_BUFFER_SIZE + "?)",
                            wcs.failure(i)));
                }
                return;
            }
            if (c == null) {
                return; // for a connection retired meanwhile
            }
            if (c.tenant() != tenant) { // cannot happen: a QP receives only from its own PD's SRQ
                protocolError(c, "a message in another application's receive buffer");
                return;
            }
            Message m;
            try {
                MemorySegment received;
                synchronized (receivePool) {
                    if (tenant.isClosed()) {
                        return;
                    }
                    received = receivePool.buffer(slot, wcs.byteLength(i));
                }
                m = codec.get().decode(received, wcs.byteLength(i));
            } catch (MalformedMessageException | IllegalArgumentException e) {
                protocolError(c, e.getMessage());
                return;
            }
            deliver(c, m);
        } finally {
            synchronized (receivePool) {
                if (!tenant.isClosed()) {
                    receivePool.repost(slot);
                }
            }
        }
    }

    private void deliver(DataConnection c, Message m) {
        if (c.role() == DataConnection.Role.SERVING) {
            if (!(m instanceof Message.FetchRequest r)) {
                protocolError(c, "a " + m.getClass().getSimpleName() + " where only fetch requests are served");
                return;
            }
            String app = c.tenant().app();
            FetchRequestHandler requests = c.tenant().requests();
            Message ready = requests.answerIfReady(app, r);
            if (ready != null) {
                reply(c, r, ready);
                return;
            }
            try {
                servers.execute(() -> {
                    Message answer;
                    try {
                        answer = requests.answer(app, r);
                    } catch (RuntimeException e) { // a bug, not a bad request: still answer, so the reducer need not time out
                        LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: cannot answer a fetch request on " + c, e);
                        answer = new Message.ErrorResponse(r.requestId(), "the server failed to answer (see its log)");
                    }
                    reply(c, r, answer);
                });
            } catch (RejectedExecutionException closing) {
                // the engine is closing: the reducer learns it from the connection's end
            }
        } else if (c.attachment() instanceof PeerFetcher f) {
            f.onMessage(m);
        }
    }

    private void reply(DataConnection c, Message.FetchRequest r, Message answer) {
        if (c.isClosed()) {
            return; // retired while a server thread answered
        }
        try {
            send(c, answer, false);
        } catch (IllegalArgumentException tooBig) {
            send(c, new Message.ErrorResponse(r.requestId(), "the answer does not fit the reducer's "
                    + c.peerReceiveBufferSize() + "-byte receive buffer"), false);
        } catch (RuntimeException e) {
            connectionFailed(c, e);
        }
    }

    /** A malformed or unexpected message: the fetching side fails the connection; the serving side says why, then closes. */
    private void protocolError(DataConnection c, String reason) {
        LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: malformed message on " + c + ": " + reason + "; closing it");
        if (c.role() == DataConnection.Role.FETCHING) {
            connectionFailed(c, new MalformedMessageException(reason));
            return;
        }
        try {
            send(c, new Message.ErrorResponse(Message.CONNECTION_ERROR, "malformed message: " + reason), true);
            timer.schedule(() -> retire(c), config.connectTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (RuntimeException e) {
            retire(c);
        }
    }

    private void onSendCompleted(WorkCompletions wcs, int i, long seq) {
        boolean ok = wcs.isSuccess(i);
        sender.onCompleted(seq, ok, ok ? null : new IOException("a metadata SEND failed with " + wcs.status(i), wcs.failure(i)));
    }

    private void onReadCompleted(WorkCompletions wcs, int i, long chainId) {
        DataConnection c = byQpNumber.get(wcs.qpNumber(i));
        if (c != null && c.attachment() instanceof PeerFetcher f) {
            f.onChainCompleted(chainId, wcs.isSuccess(i) ? null
                    : new IOException("RDMA_READ failed with " + wcs.status(i) + describeReadFailure(wcs.status(i)), wcs.failure(i)));
        }
    }

    private static String describeReadFailure(WorkCompletionStatus status) {
        return switch (status) {
            case REM_ACCESS_ERR -> " (the peer refused the rkey or the range: block descriptor wrong or region gone)";
            case RETRY_EXC_ERR -> " (the peer does not answer)";
            default -> "";
        };
    }

    private void connectionFailed(DataConnection c, Throwable cause) {
        if (c.attachment() instanceof PeerFetcher f) {
            f.fail(cause);
        } else {
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: closing " + c + ": " + cause.getMessage());
            retire(c);
        }
    }

    private void onFetchBufferReleased() {
        if (!closed) {
            // Not inline: a release can happen under a fetcher's lock, and waking runs other fetchers.
            timer.execute(budget::wakeWaiters);
        }
    }

    /**
     * Device events: the shared receive queue running low (post every repost gathered so far, now, and
     * re-arm) and queue pairs the device put in error (their connection fails like any other).
     */
    private void watchAsyncEvents() {
        while (!closed) {
            AsyncEvent e;
            try {
                e = context.awaitAsyncEvent(java.time.Duration.ofMillis(200));
            } catch (RuntimeException ex) {
                if (!closed) {
                    LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: reading async events failed", ex);
                }
                return;
            }
            if (e == null || closed) {
                continue;
            }
            switch (e.type()) {
                case SRQ_LIMIT_REACHED -> {
                    lowWaterEvents.incrementAndGet();
                    for (TenantDomain t : tenants.values()) {
                        if (t.srq() == e.source()) {
                            synchronized (t.receivePool()) {
                                if (!t.isClosed()) {
                                    t.receivePool().flush();
                                    t.rearm();
                                }
                            }
                        }
                    }
                }
                case QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR -> {
                    if (e.source() instanceof QueuePair qp) {
                        DataConnection c = byQpNumber.get(qp.qpNumber());
                        if (c != null) {
                            connectionFailed(c, new IOException("the device reported " + e.type() + " on queue pair "
                                    + qp.qpNumber()));
                        }
                    }
                }
                default -> LOG.log(System.Logger.Level.INFO, "rdma-shuffle: device event " + e.type() + " on port " + e.portNumber());
            }
        }
    }

    private void tick() {
        long now = System.nanoTime();
        for (PeerFetcher f : fetchers.values()) {
            f.checkTimeouts(now);
        }
        budget.wakeWaiters();
    }

    // ------------------------------------------------------------------ shutdown

    /**
     * Fails every fetch still under way, destroys every connection and frees every device resource.
     * Bounded: nothing here waits on a peer.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        timer.shutdownNow();
        servers.shutdownNow();
        try {
            asyncEvents.join(1000);
            // A server thread may be in a disk search (it then finds the registry closed) or in a
            // registration, which cannot be interrupted: the registry's close waits for that one.
            servers.awaitTermination(1, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        controlServer.close();
        for (PeerFetcher f : new ArrayList<>(fetchers.values())) {
            f.fail(new IOException("the engine is closing"));
        }
        fetchers.clear();
        for (DataConnection c : new ArrayList<>(serving)) {
            retire(c);
        }
        for (CompletionPoller p : pollers) {
            p.stop();
        }
        controlClients.close();
        if (fetchBuffers != null) {
            fetchBuffers.close();
        }
        List<TenantDomain> all;
        synchronized (tenantsByApp) {
            all = new ArrayList<>(tenants.values());
            tenantsByApp.clear();
        }
        for (TenantDomain t : all) {
            closeTenant(t); // every connection is retired already: SRQ, regions, PD
        }
        for (CompletionPoller p : pollers) {
            p.close();
        }
        context.close();
    }

    private final class Transport implements FetchTransport {
        @Override
        public long nextId() {
            return ids.incrementAndGet();
        }

        @Override
        public void send(DataConnection connection, Message message) {
            RdmaShuffleEngine.this.send(connection, message, false);
        }

        @Override
        public void retire(DataConnection connection) {
            RdmaShuffleEngine.this.retire(connection);
        }

        @Override
        public RegisteredBufferPool buffers() {
            return fetchBuffers;
        }


        @Override
        public FetchBudget budget() {
            return budget;
        }
    }
}
