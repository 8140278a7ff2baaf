package org.rdmashuffle.core;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import org.rdmashuffle.core.buffer.RegisteredBufferPool;
import org.rdmashuffle.core.client.BlockFetchException;
import org.rdmashuffle.core.client.BlockFetchListener;
import org.rdmashuffle.core.client.FetchBudget;
import org.rdmashuffle.core.client.FetchSubmitter;
import org.rdmashuffle.core.client.FetchTransport;
import org.rdmashuffle.core.client.FetchingConnections;
import org.rdmashuffle.core.client.PeerFetcher;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.control.ControlClientPool;
import org.rdmashuffle.core.control.ControlServer;
import org.rdmashuffle.core.control.ControlSession;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.protocol.ConnectCodec;
import org.rdmashuffle.core.protocol.MalformedMessageException;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.protocol.MessageCodec;
import org.rdmashuffle.core.server.ApplicationStops;
import org.rdmashuffle.core.server.ControlAdmission;
import org.rdmashuffle.core.server.FairThreads;
import org.rdmashuffle.core.server.OutputSearches;
import org.rdmashuffle.core.server.ServiceLimits;
import org.rdmashuffle.core.server.ServiceUsage;
import org.rdmashuffle.core.server.FetchRequestServer;
import org.rdmashuffle.core.server.MapOutputRegistry;
import org.rdmashuffle.core.server.ServingConnections;
import org.rdmashuffle.core.transport.AsyncEventWatcher;
import org.rdmashuffle.core.transport.CompletionDispatcher;
import org.rdmashuffle.core.transport.CompletionPoller;
import org.rdmashuffle.core.transport.ConnectionTable;
import org.rdmashuffle.core.transport.DataConnection;
import org.rdmashuffle.core.transport.DeviceProfile;
import org.rdmashuffle.core.transport.DeviceSetup;
import org.rdmashuffle.core.transport.MessageTamper;
import org.rdmashuffle.core.transport.MetadataSender;
import org.rdmashuffle.core.transport.QueuePairFactory;
import org.rdmashuffle.core.transport.TenantDomain;
import org.rdmashuffle.core.transport.Tenants;
import org.rdmashuffle.core.transport.ReceivePool;
import org.rdmashuffle.verbs.AsyncEvent;
import org.rdmashuffle.verbs.SharedReceiveQueue;
import org.rdmashuffle.verbs.Verbs;
import org.rdmashuffle.verbs.VerbsContext;
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
 * <p>Fetching side: {@link #fetchBlocks} sets up (on a dialer thread, the first time) or reuses the
 * data connection to the peer through the authenticated control plane, then a {@link PeerFetcher} asks for descriptors and pulls the
 * blocks with RDMA_READ chains (posted from a {@link FetchSubmitter}'s thread on the software provider);
 * {@link CompletionPoller} threads dispatch completions to it.
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
    private static final int FETCH_BUFFER_SLAB = 4 << 20;

    /** Test hook: sees and may change every outgoing metadata message (fault-injection tests). */
    interface Tamper extends MessageTamper {
    }

    private final EngineConfig config;
    private final VerbsProvider provider;
    private final VerbsContext context;
    /** GID, connect options and queue sizes, probed once. */
    private final DeviceProfile profile;
    private final CompletionPoller[] pollers;
    /** An executor's engine: its own application's resources; null in a shuffle service. */
    private final TenantDomain own;
    /** Every bound a serving engine puts on its tenants (docs/security.md's table). */
    private final ServiceLimits limits;
    /** Connections each application and user holds, against {@link #limits}. */
    private final ServiceUsage usage;
    /** Searches of the node's disks for outputs nobody registered, one of a user at a time; null in an executor's engine. */
    private final FairThreads lookups;
    /** Ends stopped applications' tenants, off the caller's thread (YARN's dispatcher must not wait on a peer). */
    private final ApplicationStops stops;
    private final Tenants tenants;
    private final QueuePairFactory queuePairs;
    private final ServingConnections servingConnections;
    private final MetadataSender sender;
    /** Buffers reads land in: an executor's engine only (a shuffle service does not fetch). */
    private final RegisteredBufferPool fetchBuffers;
    private final FetchBudget budget;
    /**
     * Answer the fetch requests the poller cannot answer at once, a few outputs' slow work per turn,
     * round-robin across applications, bounded per application, all but one of them at most for one user.
     */
    private final FairThreads servers;
    /** Answers fetch requests on serving connections: ready ones on the poller, the others on {@link #servers}. */
    private final FetchRequestServer requestServer;
    /**
     * Run control-plane requests (a CONNECT creates and connects queue pairs, which on the software
     * provider may dial the peer): off the control plane's event loop, taken fairly across applications,
     * at most two of one user at a time (one whose dials hang leaves threads for the others), bounded,
     * so a slow or hostile peer holds up at most these threads, never other peers' handshakes.
     */
    private final FairThreads connectors;
    /**
     * Queue-pair set-up (either side) holds the read lock; close takes the write lock before it frees
     * device resources, so no set-up creates a QP on a destroyed PD.
     */
    private final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();
    private final ControlServer controlServer;
    private final ControlClientPool controlClients;
    private final java.util.concurrent.ScheduledThreadPoolExecutor timer;
    private final ThreadLocal<MessageCodec> codec;
    private final AtomicLong ids = new AtomicLong();
    private final AtomicLong lowWaterEvents = new AtomicLong();
    private final java.util.concurrent.atomic.AtomicBoolean wakeScheduled = new java.util.concurrent.atomic.AtomicBoolean();
    private final AsyncEventWatcher asyncEvents;
    private final ConnectionTable connections = new ConnectionTable();
    /** The fetching side's connections: an executor's engine only. */
    private final FetchingConnections fetching;
    /** Runs fetch calls off the caller's thread (see {@link EngineConfig#handOffFetchesOn}); null: inline. */
    private final FetchSubmitter submitter;
    private final FetchTransport transport = new Transport();
    /** Test hook: while set, registering a fetch-buffer slab fails with it (as ibv_reg_mr does out of pinnable memory). */
    private volatile RuntimeException fetchBufferFault;
    private volatile boolean closed;

    private RdmaShuffleEngine(EngineConfig config, String appId, byte[] secret, VerbsProvider provider) {
        this(config, appId, secret, false, null, provider);
    }

    /**
     * @param service false for the engine of one application ({@code appId}, {@code secret}); true for
     *        a node's shuffle service, serving the applications {@code services} knows the secrets and
     *        users of (null: authentication off, each application its own user)
     */
    private RdmaShuffleEngine(EngineConfig config, String appId, byte[] secret, boolean service,
                              ServedApplications services, VerbsProvider provider) {
        config.validate();
        this.config = config;
        this.limits = ServiceLimits.of(config);
        java.util.function.Function<String, String> userOf = services == null ? app -> app : services::user;
        this.usage = new ServiceUsage(limits, userOf);
        this.provider = provider;
        this.context = DeviceSetup.open(provider, config.device(), config.bindAddress());
        List<AutoCloseable> made = new ArrayList<>();
        try {
            this.profile = DeviceProfile.probe(config, context);
            int cqEntries = profile.cqEntries();
            this.budget = new FetchBudget(config.maxBytesInFlight(), profile.maxChains());
            CompletionDispatcher dispatcher = new CompletionDispatcher(this::onReceive, this::onSendCompleted,
                    this::onReadCompleted);
            this.pollers = new CompletionPoller[config.pollerThreads()];
            for (int i = 0; i < pollers.length; i++) {
                pollers[i] = new CompletionPoller(context, "rdma-shuffle-poller-" + i, cqEntries, 64,
                        config.busyPollOn(provider), provider.completesOnItsOwnThreads(), dispatcher);
                CompletionPoller p = pollers[i];
                made.add(p::close);
            }
            FairThreads searches = this.lookups = !service ? null : new FairThreads("rdma-shuffle-lookup",
                    ServiceLimits.LOOKUP_THREADS, ServiceLimits.LOOKUP_QUEUE_PER_APPLICATION, 1, limits.lookupThreadsPerUser());
            if (searches != null) {
                made.add(searches::close);
            }
            // An executor's engine has one tenant, its own; a service makes one per application as they come.
            this.tenants = new Tenants(context, config, limits, service, userOf, searches == null
                    ? app -> OutputSearches.Lookups.INLINE
                    : app -> search -> searches.submit(app, userOf.apply(app), search), cqEntries);
            this.own = service ? null : tenants.of(MapOutputRegistry.OWN);
            if (own != null) {
                made.add(own);
            }
            this.queuePairs = new QueuePairFactory(pollers, profile.maxSendWr(),
                    Math.min(profile.maxSendWr(), config.sendBuffers()), profile.maxReadSge(), config.postPath(), service);
            this.servingConnections = new ServingConnections(config, this::tenant, queuePairs, profile.servingOptions(),
                    profile.sgeListBroken(),
                    new ServingConnections.Table() {
                        @Override
                        public void add(DataConnection c) {
                            connections.trackServing(c);
                        }

                        @Override
                        public void retire(DataConnection c) {
                            RdmaShuffleEngine.this.retire(c);
                        }
                    }, usage);
            this.timer = new java.util.concurrent.ScheduledThreadPoolExecutor(1, r -> Thread.ofPlatform().daemon()
                    .name("rdma-shuffle-timer").unstarted(r));
            timer.setRemoveOnCancelPolicy(true);
            made.add(timer::shutdownNow);
            // Exactly fetchBufferMemory: registered in slabs of 4 MiB, or of the largest power of two it holds if less.
            TenantDomain fetchDomain = own;
            this.fetchBuffers = own == null ? null : new RegisteredBufferPool(bytes -> {
                RuntimeException fault = fetchBufferFault;
                if (fault != null) {
                    throw fault;
                }
                return fetchDomain.pd().allocateAndRegister(bytes, org.rdmashuffle.verbs.Access.LOCAL_WRITE);
            }, config.fetchBufferMemory(), (int) Math.min(FETCH_BUFFER_SLAB, Long.highestOneBit(config.fetchBufferMemory())),
                    this::onFetchBufferReleased, timer); // new slabs registered on the timer, never on a poller
            if (fetchBuffers != null) {
                made.add(fetchBuffers);
                fetchBuffers.grow(); // the first slab now: the first fetches wait for nothing
            }
            this.servers = new FairThreads("rdma-shuffle-server", config.serverThreads(), ServiceLimits.SERVER_QUEUE_PER_APPLICATION,
                    Integer.MAX_VALUE, limits.serverThreadsPerUser());
            made.add(servers::close);
            this.requestServer = new FetchRequestServer(servers, new FetchRequestServer.Replies() {
                @Override
                public void send(DataConnection c, Message m) {
                    RdmaShuffleEngine.this.send(c, m, false);
                }

                @Override
                public void connectionFailed(DataConnection c, Throwable cause) {
                    RdmaShuffleEngine.this.connectionFailed(c, cause);
                }

                @Override
                public void protocolError(DataConnection c, String reason) {
                    RdmaShuffleEngine.this.protocolError(c, reason);
                }
            }, usage);
            int decodeBound = config.receiveBufferSize();
            this.codec = ThreadLocal.withInitial(() -> new MessageCodec(decodeBound));
            this.sender = new MetadataSender(ids, codec, new MetadataSender.Listener() {
                @Override
                public void connectionFailed(DataConnection c, Throwable cause) {
                    if (!c.markFailureReported()) {
                        return; // its other sends failing (a flush): one timer task per connection, not per send
                    }
                    // Not inline: a sender may be a fetcher holding its lock, and failing a connection takes
                    // its fetcher's lock (another fetcher's, or a re-entry into its own).
                    try {
                        timer.execute(() -> RdmaShuffleEngine.this.connectionFailed(c, cause));
                    } catch (java.util.concurrent.RejectedExecutionException closing) {
                        RdmaShuffleEngine.this.connectionFailed(c, cause); // the engine is closing: nobody sends now
                    }
                }

                @Override
                public void retire(DataConnection c) {
                    RdmaShuffleEngine.this.retire(c);
                }
            }, limits.sendDeadline().toMillis());
            this.controlClients = new ControlClientPool(secret, appId, MAX_CONTROL_FRAME, config.connectTimeout(),
                    provider.dataPathAddress(context), config.controlClientThreads());
            made.add(controlClients);
            this.fetching = own == null ? null : new FetchingConnections(config, own, queuePairs, profile.options(),
                    profile.maxReadSge(), profile.sgeListBroken(), controlClients, transport, lifecycle.readLock(), () -> closed, connections::track);
            this.submitter = own == null || !config.handOffFetchesOn(provider) ? null
                    : new FetchSubmitter("rdma-shuffle-fetch-submitter");
            byte[] appSecret = secret == null ? null : secret.clone();
            Function<String, byte[]> secrets = service ? (services == null ? null : services::secret)
                    : appSecret == null ? null : app -> app.equals(appId) ? appSecret : null;
            this.connectors = new FairThreads("rdma-shuffle-connector", ServiceLimits.CONNECTOR_THREADS,
                    ServiceLimits.CONNECT_QUEUE_PER_APPLICATION, limits.connectorsPerUser(), limits.connectorsPerUser());
            made.add(connectors::close);
            this.stops = new ApplicationStops(this::endTenant, config.connectTimeout().toMillis() + 2000);
            this.controlServer = new ControlServer(new InetSocketAddress(config.bindAddress(), config.controlPort()),
                    secrets, this::onControlRequest, MAX_CONTROL_FRAME, (app, task) -> connectors.submit(app, userOf.apply(app), task),
                    limits.handshakeTimeout(), limits.controlIdleTimeout(), new ControlAdmission(tenants::hasStopped, usage));
            made.add(controlServer);
            for (CompletionPoller p : pollers) {
                p.start();
            }
            this.asyncEvents = new AsyncEventWatcher(context, new AsyncEventWatcher.Handler() {
                @Override
                public void receiveQueueLow(SharedReceiveQueue srq) {
                    onReceiveQueueLow(srq);
                }

                @Override
                public void queuePairFailed(int qpNumber, AsyncEvent.Type type) {
                    onQueuePairFailed(qpNumber, type);
                }
            });
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
                + (gid().index() >= 0 ? ", GID[" + gid().index() + "] " + gid().gid() + " (" + gid().reason() + ")" : "")
                + ", control plane " + controlServer.address() + ", post path " + config.postPath()
                + (profile.sgeListBroken() ? " (multi-SGE reads via ibv_post_send: rxe sge_list bug)" : ""));
    }

    /** Starts an engine on the provider {@code config} names ({@code auto} picks libibverbs if usable, else software). */
    public static RdmaShuffleEngine start(EngineConfig config, String appId, byte[] secret) {
        return new RdmaShuffleEngine(config, appId, secret, Verbs.choose(config.provider(), config.providerSettings()).orElseThrow());
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

    // ------------------------------------------------------------------ public API

    /** Where peers reach this engine's control plane: what the adapter publishes (e.g. in Spark's BlockManagerId). */
    public InetSocketAddress address() {
        return controlServer.address();
    }

    /** The GID our queue pairs send from, and why (-1 on InfiniBand). */
    public org.rdmashuffle.verbs.GidChoice gid() {
        return profile.gid();
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

    /**
     * Forgets a shuffle: its outputs here (their regions deregistered), and the layouts of its outputs
     * that other engines sent us.
     */
    public void unregisterShuffle(int shuffleId) {
        requireOwn().registry().unregisterShuffle(shuffleId);
        for (PeerFetcher f : fetchers()) {
            f.forgetLayouts(shuffleId);
        }
    }

    /**
     * The adapter says a map output is lost (a fetch of it failed and the map will run again): its
     * layout, wherever a peer sent it, is not used again; its blocks are asked for afresh.
     */
    public void forgetOutput(int shuffleId, long mapId) {
        for (PeerFetcher f : fetchers()) {
            f.forgetLayout(shuffleId, mapId);
        }
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
     * A shuffle service forgets an application: it is refused from now on (a CONNECT on a control
     * connection of its, or a new one), its control connections close, and its reducers' connections,
     * outputs' regions and protection domain are freed on the engine's stopper thread — never on the
     * caller's (YARN's dispatcher), which returns at once, whatever the application's peers do. Returns
     * how many outputs it had here.
     */
    public int unregisterApplication(String app) {
        requireService();
        TenantDomain t = tenants.stop(app);
        controlServer.closeConnections(app);
        if (t == null) {
            return 0;
        }
        int outputs = t.registry().mapOutputs();
        stops.stop(t);
        return outputs;
    }

    /** Applications stopped whose resources are still being freed (tests watch it reach 0). */
    public int stopsUnderWay() {
        return stops.underWay();
    }

    /**
     * Ends a stopped application's tenant, on the stopper thread: its connections (QPs) first, then
     * its SRQ, regions and PD once no queue-pair set-up is on it (waited for at most {@code waitMillis}).
     */
    private java.util.concurrent.CompletableFuture<Void> endTenant(TenantDomain t, long waitMillis) {
        for (DataConnection c : new ArrayList<>(t.connections())) {
            retire(c);
        }
        return t.closeAsync(waitMillis);
    }

    /**
     * Who finds outputs nobody registered with this engine, when a reducer first asks for one: for a
     * shuffle service, applications' outputs on the node's disks (MapReduce's, Spark's); for an
     * executor's engine (asked with application {@link MapOutputRegistry#OWN}), outputs another
     * executor moved to this one when it was decommissioned.
     */
    public void resolver(MapOutputRegistry.Resolver resolver) {
        if (own != null) {
            own.registry().resolver(resolver);
        } else {
            tenants.resolver(resolver);
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

    /** The tenant of {@code app}, made at its first output or connection; an executor's engine has only its own. */
    private TenantDomain tenant(String app) {
        return own != null ? own : tenants.of(app);
    }

    private void requireService() {
        if (own != null) {
            throw new IllegalStateException("only a shuffle service's engine (startService) serves other applications");
        }
    }

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
        if (blocks.isEmpty()) {
            return;
        }
        if (submitter != null) {
            submitter.submit(() -> fetchNow(peer, blocks, listener));
        } else {
            fetchNow(peer, blocks, listener);
        }
    }

    /** {@link #fetchBlocks} on the thread that runs the call: the caller's, or the submitter's. */
    private void fetchNow(InetSocketAddress peer, List<BlockId> blocks, BlockFetchListener listener) {
        PeerFetcher f;
        try {
            requireOwn();
            f = fetching.connected(peer);
        } catch (RuntimeException e) {
            cannotConnect(peer, blocks, listener, e);
            return;
        }
        if (f != null && f.fetch(blocks, listener)) {
            return;
        }
        // Set up on a dialer thread, not this one: a reduce task reads its local blocks meanwhile.
        fetching.whenConnected(peer, c -> {
            if (!c.fetch(blocks, listener)) { // closed for idleness meanwhile: to the next connection
                fetchNow(peer, blocks, listener);
            }
        }, e -> cannotConnect(peer, blocks, listener, e));
    }

    /**
     * Starts connecting to these peers before their blocks are asked for (see {@link
     * FetchingConnections#connectAhead}); this engine's own address and peers already connected are
     * skipped. Returns at once; a peer that cannot be reached is reported by the first fetch from it.
     */
    public void connectAhead(java.util.Collection<InetSocketAddress> peers) {
        if (own == null || closed) {
            return;
        }
        InetSocketAddress self = address();
        List<InetSocketAddress> others = new java.util.ArrayList<>(peers.size());
        for (InetSocketAddress p : peers) {
            if (!p.equals(self)) {
                others.add(p);
            }
        }
        fetching.connectAhead(others);
    }

    private static void cannotConnect(InetSocketAddress peer, List<BlockId> blocks, BlockFetchListener listener, Throwable e) {
        BlockFetchException failure = new BlockFetchException(FetchingConnections.label(peer), blocks, connectFailure(e),
                "cannot connect: " + e.getMessage(), e);
        for (BlockId b : blocks) {
            try {
                listener.onBlockFetchFailure(b, failure);
            } catch (RuntimeException ex) {
                LOG.log(System.Logger.Level.WARNING, "block fetch listener failed on the failure of " + b, ex);
            }
        }
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
        int qps = connections.servingQueuePairs();
        for (PeerFetcher f : fetchers()) {
            qps += f.connection().queuePairs();
            awaiting += f.awaitingRequests();
            queued += f.queuedReads();
            chains += f.chainsInFlight();
            wrs += f.readRequestsInFlight();
        }
        List<TenantDomain> all = tenants.all();
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
        return new EngineCounters(fetching == null ? 0 : fetching.size(), connections.servingCount(), controlClients.openConnections(), awaiting, queued, chains,
                wrs, sender.outstanding(all), fetchBuffers == null ? 0 : fetchBuffers.outstanding(), budget.bytesInFlight(),
                budget.peakBytesInFlight(), budget.readRequestsPosted(), budget.blocksRead(),
                registered, posted, lowWaterEvents.get(), completions, sleeps, qps);
    }

    private java.util.Collection<PeerFetcher> fetchers() {
        return fetching == null ? List.of() : fetching.all();
    }

    void tamper(Tamper t) {
        sender.tamper(t);
    }

    void failFetchBufferRegistrations(RuntimeException fault) {
        this.fetchBufferFault = fault;
    }

    /** Tests: the tenant of an application now, or null. */
    TenantDomain tenantOf(String app) {
        return tenants.find(app);
    }

    /** Tests: tasks waiting on the engine's timer (its own tick among them). */
    int timerTasks() {
        return timer.getQueue().size();
    }

    /** Tests: the most metadata sends one tenant has had waiting for a send slot at once. */
    int peakQueuedSends() {
        return sender.peakQueued();
    }

    // ------------------------------------------------------------------ connections

    /**
     * The control-plane request of a peer that wants to fetch from us: queue pairs for it, connected
     * to its own. Runs on a connector thread, under the lifecycle's read lock.
     */
    private byte[] onControlRequest(ControlSession session, byte type, byte[] payload) {
        if (type != ConnectCodec.CONNECT && type != ConnectCodec.DISCONNECT) {
            throw new IllegalArgumentException("unknown control request " + type);
        }
        lifecycle.readLock().lock();
        try {
            if (closed) {
                throw new IllegalStateException("the engine is closing");
            }
            return type == ConnectCodec.CONNECT ? servingConnections.connect(session, payload)
                    : servingConnections.disconnect(session, payload);
        } finally {
            lifecycle.readLock().unlock();
        }
    }

    /**
     * Destroys a connection's queue pairs and forgets it, in this order: no more completions routed to
     * it, its QPs destroyed, out of its tenant and its fetcher's peer slot, then the sends it still had
     * in flight give their buffers back.
     */
    private void retire(DataConnection c) {
        connections.untrack(c);
        c.close();
        if (c.tenant().connections().remove(c) && c.role() == DataConnection.Role.SERVING) {
            usage.remove(ServiceUsage.Kind.DATA, c.tenant().app());
        }
        if (c.attachment() instanceof PeerFetcher f) {
            fetching.forget(f);
        }
        sender.forget(c);
    }

    // ------------------------------------------------------------------ metadata messages

    private void send(DataConnection c, Message m, boolean closeAfter) {
        sender.send(c, m, closeAfter);
    }

    // ------------------------------------------------------------------ completions

    private void onReceive(WorkCompletions wcs, int i, long slot) {
        TenantDomain tenant = tenants.byIndex(TenantDomain.tenantOf(slot));
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
            DataConnection c = connections.byQpNumber(wcs.qpNumber(i));
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
            if (c.isClosing()) {
                return; // closing after a protocol error: what else its peer sends costs nothing
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
            requestServer.onMessage(c, m);
        } else if (c.attachment() instanceof PeerFetcher f) {
            f.onMessage(m);
        }
    }

    /** A malformed or unexpected message: the fetching side fails the connection; the serving side says why, then closes. */
    private void protocolError(DataConnection c, String reason) {
        if (c.role() == DataConnection.Role.FETCHING) {
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: malformed message on " + c + ": " + reason + "; closing it");
            connectionFailed(c, new MalformedMessageException(reason));
            return;
        }
        if (!c.markClosing()) {
            return; // one close per connection, however many bad messages its peer sends
        }
        LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: malformed message on " + c + ": " + reason + "; closing it");
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
        DataConnection c = connections.byQpNumber(wcs.qpNumber(i));
        if (c != null && c.attachment() instanceof PeerFetcher f) {
            f.onChainCompleted(chainId, wcs.isSuccess(i) ? null
                    : new IOException("RDMA_READ failed with " + wcs.status(i) + describeReadFailure(wcs.status(i), c),
                    wcs.failure(i)));
        }
    }

    private String describeReadFailure(WorkCompletionStatus status, DataConnection c) {
        return switch (status) {
            case REM_ACCESS_ERR -> " (the peer refused the rkey or the range: block descriptor wrong or region gone)";
            // Across hosts the usual cause is the path, not the peer: say which GIDs and what to check.
            case RETRY_EXC_ERR -> " (the peer does not answer" + (c.peerGid() == null || gid().index() < 0 ? ""
                    : " at GID " + c.peerGid() + " from our GID[" + gid().index() + "] " + gid().gid() + " on "
                    + context.device().name() + " port " + profile.options().portNumber()) + ": it died, or this path cannot "
                    + "reach it -- check `ip route get` and `ip neigh` for its address and the MTU on the way)";
            default -> "";
        };
    }

    private void connectionFailed(DataConnection c, Throwable cause) {
        if (c.attachment() instanceof PeerFetcher f) {
            f.fail(cause);
        } else {
            if (c.markClosing()) { // logged once per connection, however many ways it fails
                LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: closing " + c + ": " + cause.getMessage());
            }
            retire(c);
        }
    }

    private void onFetchBufferReleased() {
        // Not inline: a release can happen under a fetcher's lock, and waking runs other fetchers. At most
        // one wake-up pending, and none when nobody waits: not a timer task per block.
        if (!closed && budget.hasWaiters() && wakeScheduled.compareAndSet(false, true)) {
            try {
                timer.execute(() -> {
                    wakeScheduled.set(false);
                    budget.wakeWaiters();
                });
            } catch (java.util.concurrent.RejectedExecutionException closing) {
                wakeScheduled.set(false);
            }
        }
    }

    /** The shared receive queue of one tenant ran low: post every repost gathered so far, now, and re-arm it. */
    private void onReceiveQueueLow(SharedReceiveQueue srq) {
        lowWaterEvents.incrementAndGet();
        for (TenantDomain t : tenants.all()) {
            if (t.srq() == srq) {
                synchronized (t.receivePool()) {
                    if (!t.isClosed()) {
                        t.receivePool().flush();
                        t.rearm();
                    }
                }
            }
        }
    }

    /** The device put a queue pair in error: its connection fails like any other. */
    private void onQueuePairFailed(int qpNumber, AsyncEvent.Type type) {
        DataConnection c = connections.byQpNumber(qpNumber);
        if (c != null) {
            connectionFailed(c, new IOException("the device reported " + type + " on queue pair " + qpNumber));
        }
    }

    private void tick() {
        long now = System.nanoTime();
        sender.failLateSends(now);
        long idle = config.idleTimeout().toNanos();
        for (PeerFetcher f : fetchers()) {
            f.checkTimeouts(now);
            f.closeIfIdle(now, idle);
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
        if (submitter != null) {
            submitter.close(); // calls queued run now, and fail: the engine is closed
        }
        timer.shutdownNow();
        servers.close();
        connectors.close();
        if (lookups != null) {
            lookups.close(); // a search waiting on a disk keeps its thread; nothing waits for it
        }
        try {
            timer.awaitTermination(1, TimeUnit.SECONDS); // a fetch-buffer slab being registered there
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            asyncEvents.close();
            // A server thread may be in a disk search (it then finds the registry closed) or in a
            // registration, which cannot be interrupted: the registry's close waits for that one.
            servers.awaitTermination(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        controlServer.close();
        if (fetching != null) {
            fetching.stopSettingUp(); // fetches waiting for a connection fail now, not after the set-ups under way
        }
        // Set-ups under way finish (or fail) within their connect timeout; none may outlive the PDs.
        long waitMillis = config.connectTimeout().toMillis() + 2000;
        boolean quiet;
        try {
            quiet = lifecycle.writeLock().tryLock(waitMillis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            quiet = false;
        }
        if (!quiet) {
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: a queue-pair set-up is still under way after " + waitMillis
                    + " ms; the device resources are left for the process's exit");
            for (CompletionPoller p : pollers) {
                p.stop();
            }
            controlClients.close();
            return;
        }
        try {
            if (fetching != null) {
                fetching.failAll(new IOException("the engine is closing"));
            }
            for (DataConnection c : connections.serving()) {
                retire(c);
            }
            for (CompletionPoller p : pollers) {
                p.stop();
            }
            controlClients.close();
            if (fetchBuffers != null) {
                fetchBuffers.close();
            }
            List<java.util.concurrent.CompletableFuture<Void>> ended = new ArrayList<>();
            ended.add(stops.close()); // stopped applications' tenants not ended yet, ended now
            for (TenantDomain t : tenants.removeAll()) {
                ended.add(endTenant(t, waitMillis)); // no set-up runs now: its QPs, then SRQ, regions, PD
            }
            try {
                // A registration under way (ibv_reg_mr cannot be interrupted) holds its tenant's PD till it ends.
                java.util.concurrent.CompletableFuture.allOf(ended.toArray(java.util.concurrent.CompletableFuture[]::new))
                        .get(waitMillis, TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.TimeoutException | java.util.concurrent.ExecutionException | InterruptedException e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: an application's resources are not all freed after "
                        + waitMillis + " ms (" + e + "); the completion queues and device context are left for the process's exit");
                for (CompletionPoller p : pollers) {
                    p.stop();
                }
                return;
            }
            for (CompletionPoller p : pollers) {
                p.close();
            }
            context.close();
        } finally {
            lifecycle.writeLock().unlock(); // set-ups waiting now find the engine closed
        }
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
