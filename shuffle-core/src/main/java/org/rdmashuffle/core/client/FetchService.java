package org.rdmashuffle.core.client;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

import org.rdmashuffle.core.buffer.RegisteredBufferPool;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.control.AuthenticationException;
import org.rdmashuffle.core.control.ControlClientPool;
import org.rdmashuffle.core.control.ControlServer;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.transport.DeviceProfile;
import org.rdmashuffle.core.transport.TenantDomain;
import org.rdmashuffle.core.transport.TransportContext;
import org.rdmashuffle.core.metrics.FetchCounts;
import org.rdmashuffle.core.metrics.RegistrationCounts;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;

/**
 * The fetching side of an executor's engine: fetch calls (run on the {@link FetchSubmitter}'s thread
 * where the provider makes completions on its own threads, else on the caller's), the connections to
 * peers ({@link FetchingConnections}: set up on dialer threads over the control clients, one
 * {@link PeerFetcher} each), connecting ahead, forgetting lost outputs' layouts, the fetchers'
 * timeouts and idleness (a tick on the transport's timer), the registered buffers reads land in and
 * the process-wide {@link FetchBudget}. Each fetcher sends, reads and retires through its
 * connection's {@link PeerChannel}, and shares this service's {@link FetchContext}.
 *
 * <p>Threads it owns: the submitter, the dialers and the control clients' event loop; fetch-buffer
 * slabs are registered on the transport's timer, never on a poller. Closed in phases by the engine
 * ({@link #stopCalls}, {@link #stopSettingUp}, {@link #failAll}, {@link #close}). A node's service has
 * {@link FetchSide#none()} instead.
 */
public final class FetchService implements FetchSide {
    private static final System.Logger LOG = System.getLogger(FetchService.class.getName());

    private final TransportContext transport;
    private final InetSocketAddress self;
    private final FetchBudget budget;
    /** The memory every fetcher's layout cache shares. */
    private final LayoutBudget layoutBudget;
    private final RegisteredBufferPool fetchBuffers;
    private final ControlClientPool controlClients;
    private final FetchingConnections fetching;
    /** Blocks delivered and failed, their latency, connection set-ups: the operators' figures (issue 36). */
    private final FetchCounts counts = new FetchCounts();
    private final RegistrationCounts bufferRegistrations = new RegistrationCounts();
    /** Runs fetch calls off the caller's thread (see {@link EngineConfig#handOffFetchesOn}); null: inline. */
    private final FetchSubmitter submitter;
    private final AtomicBoolean wakeScheduled = new AtomicBoolean();
    private final long idleNanos;
    /** Test hook: while set, registering a fetch-buffer slab fails with it (as ibv_reg_mr does out of pinnable memory). */
    private volatile RuntimeException fetchBufferFault;

    /**
     * @param own the executor's own tenant: fetch buffers are registered on its PD, its connections' QPs made there
     * @param self this engine's control address: connecting ahead to it is skipped
     * @param secret the application's secret (null: authentication off)
     */
    public FetchService(EngineConfig config, TransportContext transport, TenantDomain own, InetSocketAddress self,
                        String appId, byte[] secret) {
        this.transport = transport;
        this.self = self;
        this.idleNanos = config.idleTimeout().toNanos();
        this.budget = new FetchBudget(config.maxBytesInFlight(), transport.profile().maxChains());
        this.layoutBudget = new LayoutBudget(config.layoutCacheMemory());
        // Exactly fetchBufferMemory: registered in slabs of 4 MiB, or of the largest power of two it holds if less.
        this.fetchBuffers = new RegisteredBufferPool(bytes -> {
            RuntimeException fault = fetchBufferFault;
            if (fault != null) {
                throw fault;
            }
            long start = System.nanoTime();
            try {
                MemoryRegion slab = own.pd().allocateAndRegister(bytes, own.registration().access(Access.LOCAL_WRITE));
                bufferRegistrations.registered(bytes, System.nanoTime() - start);
                return slab;
            } catch (RuntimeException e) {
                bufferRegistrations.failed(e);
                throw e;
            }
        }, config.fetchBufferMemory(), DeviceProfile.fetchBufferSlab(config),
                this::onFetchBufferReleased, transport.timer()); // new slabs registered on the timer, never on a poller
        ControlClientPool clients = null;
        try {
            fetchBuffers.grow(); // the first slab now: the first fetches wait for nothing
            clients = new ControlClientPool(secret, appId, ControlServer.MAX_FRAME_BYTES, config.connectTimeout(),
                    transport.provider().dataPathAddress(transport.context()), config.controlClientThreads());
        } catch (RuntimeException | Error e) {
            fetchBuffers.close();
            throw e;
        }
        this.controlClients = clients;
        this.fetching = new FetchingConnections(config, own, transport.queuePairs(), transport.profile().options(),
                transport.profile().maxReadSge(), transport.profile().sgeListBroken(), controlClients, new Context(),
                c -> new ConnectionChannel(c, transport), transport.setUpLock(), transport::isClosed, transport.connections()::track, counts);
        this.submitter = !config.handOffFetchesOn(transport.provider()) ? null
                : new FetchSubmitter("rdma-shuffle-fetch-submitter");
        transport.everyTick(this::tick);
    }

    /** See {@code RdmaShuffleEngine.fetchBlocks}: returns at once; every block gets exactly one listener call. */
    @Override
    public void fetchBlocks(InetSocketAddress peer, List<BlockId> blocks, BlockFetchListener called) {
        counts.fetchCalled();
        BlockFetchListener listener = new CountingListener(called, counts, System.nanoTime());
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

    /** Fails every block of a call that cannot reach its peer, one listener call each. */
    static void cannotConnect(InetSocketAddress peer, List<BlockId> blocks, BlockFetchListener listener, Throwable e) {
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
            if (t instanceof AuthenticationException) {
                return BlockFetchException.Kind.NOT_AUTHENTICATED;
            }
        }
        return BlockFetchException.Kind.UNREACHABLE;
    }

    /** Starts connecting to these peers (this engine itself skipped); see {@link FetchingConnections#connectAhead}. */
    @Override
    public void connectAhead(Collection<InetSocketAddress> peers) {
        if (transport.isClosed()) {
            return;
        }
        List<InetSocketAddress> others = new ArrayList<>(peers.size());
        for (InetSocketAddress p : peers) {
            if (!p.equals(self)) {
                others.add(p);
            }
        }
        fetching.connectAhead(others);
    }

    /** Layouts of a shuffle's outputs that peers sent are not used again. */
    @Override
    public void forgetLayouts(int shuffleId) {
        for (PeerFetcher f : fetching.all()) {
            f.forgetLayouts(shuffleId);
        }
    }

    /** A lost output's layout is not used again; its blocks are asked for afresh. */
    @Override
    public void forgetOutput(int shuffleId, long mapId) {
        for (PeerFetcher f : fetching.all()) {
            f.forgetLayout(shuffleId, mapId);
        }
    }

    @Override
    public FetchCounters counters() {
        int qps = 0;
        int awaiting = 0;
        int queued = 0;
        int chains = 0;
        int wrs = 0;
        for (PeerFetcher f : fetching.all()) {
            qps += f.channel().queuePairs();
            awaiting += f.awaitingRequests();
            queued += f.queuedReads();
            chains += f.chainsInFlight();
            wrs += f.readRequestsInFlight();
        }
        return new FetchCounters(fetching.size(), controlClients.openConnections(), qps, awaiting, queued, chains, wrs,
                fetchBuffers.outstanding(), budget.bytesInFlight(), budget.peakBytesInFlight(), budget.readRequestsPosted(),
                budget.blocksRead(), layoutBudget.heldBytes());
    }

    /** Tests: registering a fetch-buffer slab fails with {@code fault} while it is set. */
    public void failFetchBufferRegistrations(RuntimeException fault) {
        this.fetchBufferFault = fault;
    }

    private void onFetchBufferReleased() {
        // Not inline: a release can happen under a fetcher's lock, and waking runs other fetchers. At most
        // one wake-up pending, and none when nobody waits: not a timer task per block.
        if (!transport.isClosed() && budget.hasWaiters() && wakeScheduled.compareAndSet(false, true)) {
            try {
                transport.timer().execute(() -> {
                    wakeScheduled.set(false);
                    budget.wakeWaiters();
                });
            } catch (RejectedExecutionException closing) {
                wakeScheduled.set(false);
            }
        }
    }

    /**
     * The fetchers' timeouts and idleness, on the engine's timer: every tick while one has work (or a
     * fetch waits for room in the budget), then at the earliest idle fetcher's deadline (its close
     * for idleness, its spares dropped); none with no fetcher. A fetch, or a new connection, arms it.
     */
    private long tick(long now) {
        long next = TransportContext.IDLE;
        for (PeerFetcher f : fetching.all()) {
            f.checkTimeouts(now);
            f.closeIfIdle(now, idleNanos);
            next = Math.min(next, f.nextCheck(now, idleNanos));
        }
        budget.wakeWaiters();
        return budget.hasWaiters() ? now : next;
    }

    // ------------------------------------------------------------------ close, in phases

    /** Calls queued on the submitter run now, and fail: the engine is closed. */
    @Override
    public void stopCalls() {
        if (submitter != null) {
            submitter.close();
        }
    }

    /** Fetches waiting for a connection fail now, not after the set-ups under way. */
    @Override
    public void stopSettingUp() {
        fetching.stopSettingUp();
    }

    /** Fails every fetch under way (their QPs destroyed, so their buffers may go). */
    @Override
    public void failAll(IOException cause) {
        fetching.failAll(cause);
    }

    @Override
    public void closeControlClients() {
        controlClients.close();
    }

    /** The control clients' connections close (peers end what they set up for us), then the fetch buffers' regions. */
    @Override
    public void close() {
        controlClients.close();
        fetchBuffers.close();
    }

    /** What every fetcher of this engine shares. */
    @Override
    public FetchCounts.Snapshot fetchMetrics() {
        return counts.snapshot();
    }

    @Override
    public RegistrationCounts.Snapshot bufferRegistrations() {
        return bufferRegistrations.snapshot();
    }

    private final class Context implements FetchContext {
        @Override
        public long nextId() {
            return transport.nextId();
        }

        @Override
        public RegisteredBufferPool buffers() {
            return fetchBuffers;
        }

        @Override
        public FetchBudget budget() {
            return budget;
        }

        @Override
        public LayoutBudget layoutBudget() {
            return layoutBudget;
        }

        @Override
        public void requestSent() {
            counts.requestSent();
        }

        @Override
        public void workMade() {
            transport.armTick();
        }
    }
}
