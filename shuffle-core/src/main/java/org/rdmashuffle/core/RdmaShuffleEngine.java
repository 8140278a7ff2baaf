package org.rdmashuffle.core;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayDeque;
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
import org.rdmashuffle.core.transport.CompletionPoller;
import org.rdmashuffle.core.transport.DataConnection;
import org.rdmashuffle.core.transport.ProviderQuirks;
import org.rdmashuffle.core.transport.ReceivePool;
import org.rdmashuffle.core.transport.SendBufferPool;
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
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.QueuePairEndpoint;
import org.rdmashuffle.verbs.SendOps;
import org.rdmashuffle.verbs.SharedReceiveQueue;
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
 * <p>One protection domain, one shared receive queue with its {@link ReceivePool}, one pool of send
 * buffers, one pool of fetch buffers, and {@code pollerThreads} completion queues for all
 * connections. docs/architecture.md draws the whole path.
 */
public final class RdmaShuffleEngine implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(RdmaShuffleEngine.class.getName());
    private static final int MAX_CONTROL_FRAME = 64 << 10;
    /** Largest encoded descriptor (varints at their longest) and block id of a request. */
    private static final int MAX_DESCRIPTOR_BYTES = 58;
    private static final int MAX_REQUESTED_BLOCK_BYTES = 20;
    private static final int FETCH_BUFFER_CHUNK = 4 << 20;

    /** Test hook: sees and may change every outgoing metadata message (fault-injection tests). */
    interface Tamper {
        /** The message to send instead; null drops it. */
        default Message message(DataConnection.Role role, Message m) {
            return m;
        }

        /** The length to send after the encoded bytes were written (and possibly changed). */
        default int bytes(DataConnection.Role role, MemorySegment encoded, int length) {
            return length;
        }
    }

    private static final Tamper NO_TAMPER = new Tamper() {
    };

    private record InFlightSend(int slot, DataConnection connection, boolean closeAfter) {
    }

    private record QueuedSend(DataConnection connection, Message message, boolean closeAfter) {
    }

    private final EngineConfig config;
    private final VerbsProvider provider;
    private final VerbsContext context;
    private final ProtectionDomain pd;
    private final ConnectOptions options;
    private final boolean sgeListBroken;
    private final int maxReadSge;
    private final int maxSendWr;
    private final CompletionPoller[] pollers;
    private final SharedReceiveQueue srq;
    private final ReceivePool receivePool;
    private final SendBufferPool sendPool;
    private final RegisteredBufferPool fetchBuffers;
    private final FetchBudget budget;
    private final MapOutputRegistry registry;
    private final FetchRequestHandler requests;
    /** Answer the fetch requests the poller cannot answer at once. */
    private final ExecutorService servers;
    private final ControlServer controlServer;
    private final ControlClientPool controlClients;
    private final ScheduledExecutorService timer;
    private final ThreadLocal<MessageCodec> codec;
    private final AtomicLong ids = new AtomicLong();
    private final AtomicLong lowWaterEvents = new AtomicLong();
    private final int srqLimit;
    private final Thread asyncEvents;
    private final Map<Integer, DataConnection> byQpNumber = new ConcurrentHashMap<>();
    private final Map<InetSocketAddress, PeerFetcher> fetchers = new ConcurrentHashMap<>();
    private final Map<InetSocketAddress, Object> connecting = new ConcurrentHashMap<>();
    private final Set<DataConnection> serving = ConcurrentHashMap.newKeySet();
    private final Map<Long, InFlightSend> sendsInFlight = new ConcurrentHashMap<>();
    private final ArrayDeque<QueuedSend> queuedSends = new ArrayDeque<>();
    private final FetchTransport transport = new Transport();
    private final boolean servesManyApplications;
    private volatile Tamper tamper = NO_TAMPER;
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
            this.sgeListBroken = ProviderQuirks.builderSgeListBroken(context);
            this.maxReadSge = Math.max(1, Math.min(16, device.maxSgeRd() > 0 ? device.maxSgeRd() : device.maxSge()));
            this.maxSendWr = Math.min(device.maxQpWr() > 0 ? device.maxQpWr() : Integer.MAX_VALUE,
                    config.maxChainsInFlightPerPeer() * config.chainLength() + config.sendBuffers());
            this.pd = context.allocateProtectionDomain();
            made.add(pd);
            int cqEntries = Math.min(device.maxCqe() > 0 ? device.maxCqe() : 1 << 16, 1 << 15);
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
            this.srq = pd.createSharedReceiveQueue(config.receiveBuffers(), 1, 0);
            made.add(srq);
            this.receivePool = new ReceivePool(pd, srq, config.receiveBuffers(), config.receiveBufferSize(),
                    config.receiveLowWater(), Math.max(1, config.receiveBuffers() / 8));
            made.add(receivePool);
            // The device tells us (SRQ_LIMIT_REACHED) when fewer than this many receives remain posted.
            this.srqLimit = Math.max(1, config.receiveLowWater());
            srq.armLimit(srqLimit);
            this.sendPool = new SendBufferPool(pd, config.sendBuffers(), config.receiveBufferSize());
            made.add(sendPool);
            this.timer = Executors.newSingleThreadScheduledExecutor(r -> Thread.ofPlatform().daemon()
                    .name("rdma-shuffle-timer").unstarted(r));
            made.add(timer::shutdownNow);
            // Exactly fetchBufferMemory: registered in chunks of 4 MiB, or of the largest power of two it holds if less.
            this.fetchBuffers = new RegisteredBufferPool(pd, config.fetchBufferMemory(),
                    (int) Math.min(FETCH_BUFFER_CHUNK, Long.highestOneBit(config.fetchBufferMemory())), this::onFetchBufferReleased);
            made.add(fetchBuffers);
            this.registry = new MapOutputRegistry(pd, config.registeredMemoryLimit(), config.fetchTimeout().toMillis());
            made.add(registry);
            this.requests = new FetchRequestHandler(registry);
            AtomicInteger serverIds = new AtomicInteger();
            this.servers = Executors.newFixedThreadPool(config.serverThreads(), r -> Thread.ofPlatform().daemon()
                    .name("rdma-shuffle-server-" + serverIds.getAndIncrement()).unstarted(r));
            made.add(servers::shutdownNow);
            int decodeBound = config.receiveBufferSize();
            this.codec = ThreadLocal.withInitial(() -> new MessageCodec(decodeBound));
            this.controlClients = new ControlClientPool(secret, appId, MAX_CONTROL_FRAME, config.connectTimeout());
            made.add(controlClients);
            byte[] appSecret = secret == null ? null : secret.clone();
            this.servesManyApplications = service;
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
                Math.min(responder, 255), d.minRnrTimer(), d.timeout(), d.retryCount(), 7);
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
        registry.register(shuffleId, mapId, dataFile, offsets);
    }

    /** Forgets a shuffle's outputs and deregisters their regions. */
    public void unregisterShuffle(int shuffleId) {
        registry.unregisterShuffle(shuffleId);
    }

    /** A shuffle service's {@link #registerMapOutput(int, long, Path, long[])}: an output of application {@code app}. */
    public void registerMapOutput(String app, int shuffleId, long mapId, Path dataFile, long[] offsets) {
        requireService();
        registry.register(app, shuffleId, mapId, dataFile, offsets);
    }

    /** A shuffle service forgets an application's outputs and deregisters their regions; returns how many. */
    public int unregisterApplication(String app) {
        requireService();
        return registry.unregisterApplication(app);
    }

    /** A shuffle service finds outputs nobody registered with this (MapReduce's, on the node's disks). */
    public void resolver(MapOutputRegistry.Resolver resolver) {
        requireService();
        registry.resolver(resolver);
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
        int queuedSendCount;
        synchronized (queuedSends) {
            queuedSendCount = queuedSends.size();
        }
        long completions = 0;
        long sleeps = 0;
        for (CompletionPoller p : pollers) {
            completions += p.completed();
            sleeps += p.sleeps();
        }
        int posted;
        synchronized (receivePool) {
            posted = receivePool.posted();
        }
        return new EngineCounters(fetchers.size(), serving.size(), controlClients.openConnections(), awaiting, queued, chains,
                wrs, sendsInFlight.size() + queuedSendCount, fetchBuffers.outstanding(), budget.bytesInFlight(), budget.peakBytesInFlight(),
                budget.readRequestsPosted(), budget.blocksRead(),
                registry.registeredBytes(), posted, lowWaterEvents.get(), completions, sleeps);
    }

    void tamper(Tamper t) {
        tamper = t == null ? NO_TAMPER : t;
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
                qps[i] = createQueuePair();
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
        DataConnection c = new DataConnection(label(peer), DataConnection.Role.FETCHING, theirs.receiveBufferSize(), qps,
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

    private QueuePair createQueuePair() {
        CompletionPoller p;
        synchronized (this) {
            p = pollers[nextPoller];
            nextPoller = (nextPoller + 1) % pollers.length;
        }
        QueuePairConfig qc = new QueuePairConfig(p.completionQueue(), p.completionQueue(), srq, maxSendWr, 1, maxReadSge, 1, 0,
                false);
        if (config.postPath() == EngineConfig.PostPath.BUILDER) {
            qc = qc.withSendOps(SendOps.RDMA_READ | SendOps.SEND);
        }
        return pd.createQueuePair(qc);
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
        int n = theirs.endpoints().size();
        QueuePair[] qps = new QueuePair[n];
        List<QueuePairEndpoint> mine = new ArrayList<>(n);
        try {
            for (int i = 0; i < n; i++) {
                qps[i] = createQueuePair();
                qps[i].connect(theirs.endpoints().get(i), options);
                mine.add(qps[i].localEndpoint(options));
            }
        } catch (RuntimeException e) {
            closeAll(qps);
            throw e;
        }
        DataConnection c = new DataConnection(session.remoteAddress() + " (" + session.appId() + ")",
                DataConnection.Role.SERVING, theirs.receiveBufferSize(), qps, config.postPath(), 1, 1, sgeListBroken);
        serving.add(c);
        for (int i = 0; i < n; i++) {
            byQpNumber.put(c.qpNumber(i), c);
        }
        if (servesManyApplications) {
            c.attach(session.appId()); // the application whose outputs this reducer may read
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
        if (c.attachment() instanceof PeerFetcher f) {
            for (Map.Entry<InetSocketAddress, PeerFetcher> e : fetchers.entrySet()) {
                if (e.getValue() == f && fetchers.remove(e.getKey(), f)) {
                    // The peer's queue pairs for us live as long as our control connection: end both.
                    controlClients.disconnect(e.getKey());
                }
            }
        }
        for (Map.Entry<Long, InFlightSend> e : sendsInFlight.entrySet()) {
            if (e.getValue().connection() == c && sendsInFlight.remove(e.getKey()) != null) {
                sendPool.release(e.getValue().slot());
            }
        }
        synchronized (queuedSends) {
            queuedSends.removeIf(q -> q.connection() == c);
        }
        drainQueuedSends();
    }

    private static String label(InetSocketAddress peer) {
        return peer.getHostString() + ":" + peer.getPort();
    }

    // ------------------------------------------------------------------ metadata messages

    private void send(DataConnection c, Message m, boolean closeAfter) {
        int slot = sendPool.acquire();
        if (slot < 0) {
            synchronized (queuedSends) {
                queuedSends.add(new QueuedSend(c, m, closeAfter));
            }
            drainQueuedSends(); // a slot freed since we looked would otherwise wait for the next completion
            return;
        }
        post(c, m, slot, closeAfter);
    }

    private void post(DataConnection c, Message m, int slot, boolean closeAfter) {
        Tamper t = tamper;
        Message out = t.message(c.role(), m);
        if (out == null) { // a test dropping the message
            sendPool.release(slot);
            return;
        }
        MemorySegment buf = sendPool.slot(slot).asSlice(0, Math.min(sendPool.slotBytes(), c.peerReceiveBufferSize()));
        int length;
        try {
            length = t.bytes(c.role(), buf, codec.get().encode(out, buf));
        } catch (RuntimeException e) {
            sendPool.release(slot);
            throw e;
        }
        long seq = ids.incrementAndGet();
        sendsInFlight.put(seq, new InFlightSend(slot, c, closeAfter));
        try {
            c.postSend(WorkRequestIds.of(WorkRequestIds.SEND, seq), buf.address(), length, sendPool.lkey());
        } catch (RuntimeException e) {
            if (sendsInFlight.remove(seq) != null) {
                sendPool.release(slot);
            }
            throw e;
        }
    }

    private void drainQueuedSends() {
        while (true) {
            QueuedSend q;
            int slot;
            synchronized (queuedSends) {
                if (queuedSends.isEmpty()) {
                    return;
                }
                slot = sendPool.acquire();
                if (slot < 0) {
                    return;
                }
                q = queuedSends.poll();
            }
            try {
                post(q.connection(), q.message(), slot, q.closeAfter());
            } catch (RuntimeException e) {
                connectionFailed(q.connection(), e);
            }
        }
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
        synchronized (receivePool) {
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
            Message m;
            try {
                m = codec.get().decode(receivePool.buffer(slot, wcs.byteLength(i)), wcs.byteLength(i));
            } catch (MalformedMessageException | IllegalArgumentException e) {
                protocolError(c, e.getMessage());
                return;
            }
            deliver(c, m);
        } finally {
            synchronized (receivePool) {
                receivePool.repost(slot);
            }
        }
    }

    private void deliver(DataConnection c, Message m) {
        if (c.role() == DataConnection.Role.SERVING) {
            if (!(m instanceof Message.FetchRequest r)) {
                protocolError(c, "a " + m.getClass().getSimpleName() + " where only fetch requests are served");
                return;
            }
            String app = c.attachment() instanceof String a ? a : MapOutputRegistry.OWN;
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
                        answer = new Message.ErrorResponse(r.requestId(), "the server failed to answer: " + e);
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
        InFlightSend s = sendsInFlight.remove(seq);
        if (s == null) {
            return; // of a retired connection
        }
        sendPool.release(s.slot());
        if (!wcs.isSuccess(i)) {
            connectionFailed(s.connection(), new IOException("a metadata SEND failed with " + wcs.status(i), wcs.failure(i)));
        } else if (s.closeAfter()) {
            retire(s.connection());
        }
        drainQueuedSends();
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
                    synchronized (receivePool) {
                        receivePool.flush();
                    }
                    srq.armLimit(srqLimit);
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
        registry.close();
        fetchBuffers.close();
        sendPool.close();
        receivePool.close();
        srq.close();
        for (CompletionPoller p : pollers) {
            p.close();
        }
        pd.close();
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
