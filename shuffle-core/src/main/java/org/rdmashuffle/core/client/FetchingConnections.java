package org.rdmashuffle.core.client;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.control.ControlClientPool;
import org.rdmashuffle.core.control.ControlConnectionLostException;
import org.rdmashuffle.core.control.ServerBusyException;
import org.rdmashuffle.core.protocol.ConnectCodec;
import org.rdmashuffle.core.protocol.MalformedMessageException;
import org.rdmashuffle.core.protocol.MessageCodec;
import org.rdmashuffle.core.transport.DataConnection;
import org.rdmashuffle.core.transport.QueuePairFactory;
import org.rdmashuffle.core.transport.TenantDomain;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairEndpoint;

/**
 * The fetching side's connections: one {@link PeerFetcher} per peer engine, set up on first use
 * through the authenticated control plane (our queue pairs' endpoints for theirs) and reused while
 * both its data connection and its control connection live. A set-up runs on a dialer thread, never
 * on the thread that asked for blocks: a reduce task goes on with its local blocks meanwhile (Spark
 * counts the time its first fetch call takes as fetch wait). Concurrent first fetches to one peer
 * share one set-up.
 */
public final class FetchingConnections {
    private static final System.Logger LOG = System.getLogger(FetchingConnections.class.getName());
    /** Set-ups running at once: each is a few round trips, so a few threads serve many peers. */
    static final int DIALER_THREADS = 4;
    /** Pauses before asking a busy server again: from 10 ms (plus jitter), doubling, at most half a second. */
    private static final long FIRST_BUSY_PAUSE_MILLIS = 10;
    private static final long MAX_BUSY_PAUSE_MILLIS = 500;
    /**
     * Attempts of a set-up whose control connection closed without a word or whose handshake timed out
     * (a server under load closing the handshakes it cannot finish in time): 3 in all, after pauses from
     * 200 ms (plus as much jitter, so a stage's peers do not come back together), doubling; none begun
     * later than {@link #LOST_RETRY_WINDOW} connect timeouts after the set-up began.
     */
    private static final int LOST_CONNECTION_ATTEMPTS = 3;
    private static final long FIRST_LOST_PAUSE_MILLIS = 200;
    private static final int LOST_RETRY_WINDOW = 2;
    /** Peers whose set-up may wait for a dialer; beyond that a first fetch fails at once (every queue is bounded). */
    static final int MAX_WAITING_SET_UPS = 4096;

    private final EngineConfig config;
    private final TenantDomain own;
    private final QueuePairFactory queuePairs;
    private final ConnectOptions options;
    private final int maxReadSge;
    private final boolean sgeListBroken;
    private final ControlClientPool controlClients;
    private final FetchContext context;
    /** A new connection as its fetcher sees it. */
    private final java.util.function.Function<DataConnection, PeerChannel> channels;
    private final Lock setUp;
    private final BooleanSupplier closed;
    private final Consumer<DataConnection> register;
    private final Map<InetSocketAddress, PeerFetcher> fetchers = new ConcurrentHashMap<>();
    /** Set-ups under way or waiting for a dialer, one per peer. */
    private final Map<InetSocketAddress, CompletableFuture<PeerFetcher>> settingUp = new ConcurrentHashMap<>();
    /** The server side of each live fetcher's connection, until the fetcher is forgotten. */
    private final Map<PeerFetcher, ServerSide> servedBy = new ConcurrentHashMap<>();
    private final ThreadPoolExecutor dialers;
    /**
     * Sends DISCONNECTs, one at a time: apart from the dialers, so a DISCONNECT to a peer that died
     * (waiting out the control timeout) never holds up a set-up to a live one.
     */
    private final ThreadPoolExecutor disconnects;
    /** Where set-ups are timed and failed ones counted. */
    private final org.rdmashuffle.core.metrics.FetchCounts counts;

    /**
     * @param setUp held while queue pairs are made (the engine's close waits for it before freeing PDs)
     * @param channels a new connection as its fetcher sees it
     * @param register records a new connection's QP numbers, so its completions find it
     * @param counts where set-ups are timed and failed ones counted (not those the engine's close ends)
     */
    public FetchingConnections(EngineConfig config, TenantDomain own, QueuePairFactory queuePairs, ConnectOptions options,
                               int maxReadSge, boolean sgeListBroken, ControlClientPool controlClients,
                               FetchContext context, java.util.function.Function<DataConnection, PeerChannel> channels,
                               Lock setUp, BooleanSupplier closed, Consumer<DataConnection> register,
                               org.rdmashuffle.core.metrics.FetchCounts counts) {
        this.counts = counts;
        this.config = config;
        this.own = own;
        this.queuePairs = queuePairs;
        this.options = options;
        this.maxReadSge = maxReadSge;
        this.sgeListBroken = sgeListBroken;
        this.controlClients = controlClients;
        this.context = context;
        this.channels = channels;
        this.setUp = setUp;
        this.closed = closed;
        this.register = register;
        AtomicInteger ids = new AtomicInteger();
        this.dialers = new ThreadPoolExecutor(DIALER_THREADS, DIALER_THREADS, 30, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(MAX_WAITING_SET_UPS), r -> Thread.ofPlatform().daemon()
                .name("rdma-shuffle-dialer-" + ids.getAndIncrement()).unstarted(r));
        dialers.allowCoreThreadTimeOut(true); // an engine that fetches nothing holds no dialer
        this.disconnects = new ThreadPoolExecutor(1, 1, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(MAX_WAITING_SET_UPS),
                r -> Thread.ofPlatform().daemon().name("rdma-shuffle-disconnect").unstarted(r));
        disconnects.allowCoreThreadTimeOut(true);
    }

    /** The live fetcher of {@code peer}, or null if a connection has to be set up first. */
    public PeerFetcher connected(InetSocketAddress peer) {
        if (closed.getAsBoolean()) {
            throw new IllegalStateException("the engine is closed");
        }
        return usable(peer);
    }

    /**
     * Sets up a connection to {@code peer} on a dialer thread (or joins the one under way), then calls
     * {@code then} with its fetcher there, or {@code failed} with why it could not be set up.
     */
    public void whenConnected(InetSocketAddress peer, Consumer<PeerFetcher> then, Consumer<Throwable> failed) {
        CompletableFuture<PeerFetcher> setUp = settingUp.computeIfAbsent(peer, this::startSetUp);
        if (setUp.isCompletedExceptionally()) {
            settingUp.remove(peer, setUp); // refused by the dialers: the next fetch tries again
        }
        setUp.whenComplete((f, error) -> { // this very future: its error comes unwrapped
            if (error == null) {
                then.accept(f);
            } else {
                failed.accept(error);
            }
        });
    }

    /**
     * Starts setting up connections to these peers before any block is asked of them: Spark knows a
     * reduce task's peers when it starts, but asks only as many of them as its bytes in flight allow,
     * so without this the later peers' set-ups would each wait inside a fetch. Peers already connected
     * or being set up are skipped; a set-up that fails is forgotten (the first fetch tries again and
     * reports it). Ahead-of-need set-ups take at most half of the dialers' queue, so they never crowd
     * out a fetch's own.
     */
    public void connectAhead(Collection<InetSocketAddress> peers) {
        for (InetSocketAddress peer : peers) {
            if (closed.getAsBoolean() || dialers.getQueue().size() >= MAX_WAITING_SET_UPS / 2) {
                return;
            }
            if (usable(peer) != null || settingUp.containsKey(peer)) {
                continue;
            }
            CompletableFuture<PeerFetcher> setUp = settingUp.computeIfAbsent(peer, this::startSetUp);
            if (setUp.isCompletedExceptionally()) {
                settingUp.remove(peer, setUp);
            }
            setUp.whenComplete((f, error) -> {
                if (error != null) {
                    LOG.log(System.Logger.Level.DEBUG, "connecting ahead to " + label(peer) + " failed: " + error);
                }
            });
        }
    }

    private CompletableFuture<PeerFetcher> startSetUp(InetSocketAddress peer) {
        CompletableFuture<PeerFetcher> setUp = new CompletableFuture<>();
        try {
            dialers.execute(() -> {
                try {
                    PeerFetcher f = usable(peer); // made meanwhile by a set-up that just ended; connect checks closed
                    if (f == null) {
                        long start = System.nanoTime();
                        f = connect(peer);
                        counts.connected(System.nanoTime() - start);
                    }
                    setUp.complete(f);
                } catch (IOException | RuntimeException e) {
                    if (!closed.getAsBoolean()) {
                        counts.connectionFailed();
                    }
                    setUp.completeExceptionally(e);
                } finally {
                    settingUp.remove(peer, setUp); // waits for computeIfAbsent to have put it
                }
            });
        } catch (RejectedExecutionException e) {
            setUp.completeExceptionally(new IOException(dialers.isShutdown() ? "the engine is closing"
                    : MAX_WAITING_SET_UPS + " connection set-ups are already waiting", e));
        }
        return setUp;
    }

    /** Stops setting up connections (the engine is closing): set-ups waiting fail, with the fetches that wait for them. */
    public void stopSettingUp() {
        dialers.shutdownNow(); // set-ups under way find the engine closed, or fail when interrupted
        disconnects.shutdownNow(); // the control connections close with the engine: the peers end their side
        IOException closing = new IOException("the engine is closing");
        for (CompletableFuture<PeerFetcher> setUp : settingUp.values()) {
            setUp.completeExceptionally(closing);
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

    /**
     * Sets up the data connection. A server whose control plane is busy (its queue for our application
     * full: a large stage's reducers all asking at once) is asked again after a growing, jittered pause,
     * for at most the connect timeout (counted again from each new connection after a lost one). A
     * control connection that closed without a word, or whose handshake timed out, is made again after a
     * jittered pause, at most {@link #LOST_CONNECTION_ATTEMPTS} attempts in all, none begun past
     * {@link #LOST_RETRY_WINDOW} connect timeouts: the server closes, under load, the handshakes it
     * cannot finish in time. A refusal the server names (the secret, the application, versions, a
     * bound) is final. Pauses are spent outside the set-up lock, so the engine's close does not wait for them.
     */
    private PeerFetcher connect(InetSocketAddress peer) throws IOException {
        long began = System.nanoTime();
        long connectTimeout = config.connectTimeout().toNanos();
        long busyUntil = began + connectTimeout;
        long pauseMillis = FIRST_BUSY_PAUSE_MILLIS;
        int lost = 0;
        while (true) {
            long pause;
            setUp.lock();
            try {
                if (closed.getAsBoolean()) {
                    throw new IllegalStateException("the engine is closing");
                }
                PeerFetcher f = connectQueuePairs(peer);
                fetchers.put(peer, f);
                context.workMade(); // closed if it stays idle: the timer looks at it
                return f;
            } catch (ServerBusyException busy) {
                if (System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(pauseMillis) > busyUntil) {
                    throw busy;
                }
                pause = pauseMillis;
                pauseMillis = Math.min(2 * pauseMillis, MAX_BUSY_PAUSE_MILLIS);
            } catch (ControlConnectionLostException gone) {
                lost++;
                pause = FIRST_LOST_PAUSE_MILLIS << (lost - 1);
                long next = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(pause);
                if (lost >= LOST_CONNECTION_ATTEMPTS || next - began > LOST_RETRY_WINDOW * connectTimeout) {
                    throw new IOException(lost + (lost == 1 ? " attempt" : " attempts") + " to set up a connection to "
                            + label(peer) + " lost the control connection: " + gone.getMessage(), gone);
                }
                LOG.log(System.Logger.Level.DEBUG, "setting up a connection to " + label(peer) + " lost the control connection ("
                        + gone.getMessage() + "); asking again, attempt " + (lost + 1) + " of " + LOST_CONNECTION_ATTEMPTS);
                busyUntil = next + connectTimeout; // a new connection: a busy server has as long again
                pauseMillis = FIRST_BUSY_PAUSE_MILLIS;
            } finally {
                setUp.unlock();
            }
            try {
                Thread.sleep(pause + java.util.concurrent.ThreadLocalRandom.current().nextLong(pause));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("the engine is closing", e);
            }
        }
    }

    private PeerFetcher connectQueuePairs(InetSocketAddress peer) throws IOException {
        int n = config.qpsPerPeer();
        QueuePair[] qps = new QueuePair[n];
        ConnectCodec.Connect theirs;
        try {
            List<QueuePairEndpoint> mine = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                qps[i] = queuePairs.create(own, DataConnection.Role.FETCHING);
                mine.add(qps[i].localEndpoint(options));
            }
            byte[] reply = controlClients.call(peer, ConnectCodec.CONNECT,
                    ConnectCodec.encode(new ConnectCodec.Connect(config.receiveBufferSize(), mine)));
            theirs = ConnectCodec.decode(reply);
            int granted = theirs.endpoints().size();
            if (granted < 1 || granted > n) {
                throw new MalformedMessageException(n + " queue pairs offered, " + granted + " answered");
            }
            for (int i = 0; i < granted; i++) {
                QueuePairFactory.connect(qps[i], theirs.endpoints().get(i), options);
            }
            if (granted < n) { // the server allows fewer per peer than we asked for: the rest are not needed
                QueuePairFactory.closeAll(java.util.Arrays.copyOfRange(qps, granted, n));
                qps = java.util.Arrays.copyOf(qps, granted);
            }
        } catch (IOException | RuntimeException e) {
            QueuePairFactory.closeAll(qps);
            if (e instanceof IOException io) {
                throw io;
            }
            throw new IOException("cannot set up a data connection to " + label(peer) + ": " + e.getMessage(), e);
        }
        // What crosses is sized by the smaller buffer: we send at most our own slot, the peer at most its own.
        int messageBytes = Math.min(theirs.receiveBufferSize(), config.receiveBufferSize());
        DataConnection c = new DataConnection(label(peer), DataConnection.Role.FETCHING, own, messageBytes, qps,
                config.postPath(), config.chainLength(), maxReadSge, sgeListBroken, theirs.endpoints().getFirst().gid());
        // As many blocks as the answer always holds (a request of them is smaller): the peer answers from a
        // send buffer of its receive buffer's size into ours, and answers no more blocks than fit both.
        int perRequest = Math.max(1, MessageCodec.descriptorsFitting(messageBytes));
        PeerFetcher f = new PeerFetcher(channels.apply(c), context, new PeerFetcher.Limits(config.chainLength(), maxReadSge, config.maxChainBytes(),
                config.maxBytesInFlightPerPeer(), config.maxChainsInFlightPerPeer(), perRequest, config.fetchTimeout().toNanos(),
                // The peer's lease, if shorter than our timeout: a description is trusted for half of it.
                // (TimeUnit saturates: a lease of ~Long.MAX_VALUE ms, the peer's word, does not wrap negative.)
                theirs.leaseMillis() > 0 ? Math.min(config.fetchTimeout().toNanos(), TimeUnit.MILLISECONDS.toNanos(theirs.leaseMillis()))
                        : config.fetchTimeout().toNanos(),
                // Reads from page boundaries where our buffers' paging or the peer's regions' needs them.
                own.registration().pageAlignedReads() || theirs.pageAlignedReads()));
        c.handle(new FetcherOwner(f));
        servedBy.put(f, new ServerSide(peer, theirs.endpoints().getFirst().qpNumber()));
        register.accept(c);
        return f;
    }

    /**
     * A retired connection's fetcher: forgotten, and the peer asked to end its side (a DISCONNECT on
     * the control connection that set it up, from a dialer thread: the caller may be a poller). This
     * happens whoever dropped the fetcher from the table first, so a peer never keeps queue pairs for
     * a connection we closed. If the peer cannot be asked, and no connection to it is in use or being
     * made, the control connection is closed instead: the peer then ends everything it set up for us.
     */
    public void forget(PeerFetcher f) {
        fetchers.entrySet().removeIf(e -> e.getValue() == f);
        ServerSide side = servedBy.remove(f);
        if (side == null) {
            return;
        }
        try {
            disconnects.execute(() -> {
                try {
                    controlClients.callIfConnected(side.peer(), ConnectCodec.DISCONNECT,
                            ConnectCodec.encodeDisconnect(side.firstQpNumber()));
                } catch (IOException | RuntimeException e) {
                    LOG.log(System.Logger.Level.DEBUG, "asking " + label(side.peer()) + " to end a data connection failed: " + e);
                    disconnectIfUnused(side.peer());
                }
            });
        } catch (RejectedExecutionException full) {
            if (!disconnects.isShutdown()) { // closing: its control connections close, and the peers end what they set up
                disconnectIfUnused(side.peer());
            }
        }
    }

    /** Closes the control connection to {@code peer} (the peer then ends all it set up for us) if no connection to it is in use or being made. */
    private void disconnectIfUnused(InetSocketAddress peer) {
        if (!fetchers.containsKey(peer) && !settingUp.containsKey(peer)) {
            controlClients.disconnect(peer);
        }
    }

    /**
     * The owner of a fetching connection: what happens on it goes to its fetcher; retired, the fetcher
     * is forgotten ({@link #forget}). A malformed message fails the connection (its fetches are
     * retried elsewhere or reported by the fetcher).
     */
    private final class FetcherOwner implements org.rdmashuffle.core.transport.ConnectionHandler {
        private final PeerFetcher fetcher;

        FetcherOwner(PeerFetcher fetcher) {
            this.fetcher = fetcher;
        }

        @Override
        public void onMessage(DataConnection c, org.rdmashuffle.core.protocol.Message m) {
            fetcher.onMessage(m);
        }

        @Override
        public void onReadCompleted(DataConnection c, long chainId, Throwable failure) {
            fetcher.onChainCompleted(chainId, failure);
        }

        @Override
        public void onFailure(DataConnection c, Throwable cause) {
            fetcher.fail(cause);
        }

        @Override
        public void onProtocolError(DataConnection c, String reason) {
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: malformed message on " + c + ": " + reason + "; closing it");
            fetcher.fail(new MalformedMessageException(reason));
        }

        @Override
        public void onRetired(DataConnection c) {
            forget(fetcher);
        }
    }

    /** Where a fetcher's connection is served: its peer, and the server's first queue pair (what a DISCONNECT names). */
    private record ServerSide(InetSocketAddress peer, int firstQpNumber) {
    }

    /** Fails every fetcher (the engine is closing). */
    public void failAll(IOException cause) {
        stopSettingUp();
        for (PeerFetcher f : new ArrayList<>(fetchers.values())) {
            f.fail(cause);
        }
        fetchers.clear();
    }

    public Collection<PeerFetcher> all() {
        return fetchers.values();
    }

    public int size() {
        return fetchers.size();
    }

    /** "host:port": how errors name a peer. */
    public static String label(InetSocketAddress peer) {
        return peer.getHostString() + ":" + peer.getPort();
    }
}
