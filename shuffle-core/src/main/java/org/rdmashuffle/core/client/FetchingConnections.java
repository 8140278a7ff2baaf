package org.rdmashuffle.core.client;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Lock;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.control.ControlClientPool;
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
 * both its data connection and its control connection live. Concurrent first fetches to one peer
 * share one set-up.
 */
public final class FetchingConnections {
    /** Largest encoded descriptor (varints at their longest) and block id of a request. */
    private static final int MAX_DESCRIPTOR_BYTES = 58;
    private static final int MAX_REQUESTED_BLOCK_BYTES = 20;

    private final EngineConfig config;
    private final TenantDomain own;
    private final QueuePairFactory queuePairs;
    private final ConnectOptions options;
    private final int maxReadSge;
    private final boolean sgeListBroken;
    private final ControlClientPool controlClients;
    private final FetchTransport transport;
    private final Lock setUp;
    private final BooleanSupplier closed;
    private final Consumer<DataConnection> register;
    private final Map<InetSocketAddress, PeerFetcher> fetchers = new ConcurrentHashMap<>();
    private final Map<InetSocketAddress, Object> connecting = new ConcurrentHashMap<>();

    /**
     * @param setUp held while queue pairs are made (the engine's close waits for it before freeing PDs)
     * @param register records a new connection's QP numbers, so its completions find it
     */
    public FetchingConnections(EngineConfig config, TenantDomain own, QueuePairFactory queuePairs, ConnectOptions options,
                               int maxReadSge, boolean sgeListBroken, ControlClientPool controlClients,
                               FetchTransport transport, Lock setUp, BooleanSupplier closed,
                               Consumer<DataConnection> register) {
        this.config = config;
        this.own = own;
        this.queuePairs = queuePairs;
        this.options = options;
        this.maxReadSge = maxReadSge;
        this.sgeListBroken = sgeListBroken;
        this.controlClients = controlClients;
        this.transport = transport;
        this.setUp = setUp;
        this.closed = closed;
        this.register = register;
    }

    /** The fetcher of {@code peer}, connecting first if there is no usable one. */
    public PeerFetcher fetcher(InetSocketAddress peer) throws IOException {
        if (closed.getAsBoolean()) {
            throw new IllegalStateException("the engine is closed");
        }
        PeerFetcher f = usable(peer);
        if (f != null) {
            return f;
        }
        synchronized (connecting.computeIfAbsent(peer, p -> new Object())) {
            f = usable(peer);
            return f != null ? f : connect(peer);
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
        setUp.lock();
        try {
            if (closed.getAsBoolean()) {
                throw new IllegalStateException("the engine is closing");
            }
            PeerFetcher f = connectQueuePairs(peer);
            fetchers.put(peer, f);
            return f;
        } finally {
            setUp.unlock();
        }
    }

    private PeerFetcher connectQueuePairs(InetSocketAddress peer) throws IOException {
        int n = config.qpsPerPeer();
        QueuePair[] qps = new QueuePair[n];
        ConnectCodec.Connect theirs;
        try {
            List<QueuePairEndpoint> mine = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                qps[i] = queuePairs.create(own);
                mine.add(qps[i].localEndpoint(options));
            }
            byte[] reply = controlClients.call(peer, ConnectCodec.CONNECT,
                    ConnectCodec.encode(new ConnectCodec.Connect(config.receiveBufferSize(), mine)));
            theirs = ConnectCodec.decode(reply);
            if (theirs.endpoints().size() != n) {
                throw new MalformedMessageException(n + " queue pairs asked, " + theirs.endpoints().size() + " answered");
            }
            for (int i = 0; i < n; i++) {
                QueuePairFactory.connect(qps[i], theirs.endpoints().get(i), options);
            }
        } catch (IOException | RuntimeException e) {
            QueuePairFactory.closeAll(qps);
            if (e instanceof IOException io) {
                throw io;
            }
            throw new IOException("cannot set up a data connection to " + label(peer) + ": " + e.getMessage(), e);
        }
        DataConnection c = new DataConnection(label(peer), DataConnection.Role.FETCHING, own, theirs.receiveBufferSize(), qps,
                config.postPath(), config.chainLength(), maxReadSge, sgeListBroken, theirs.endpoints().getFirst().gid());
        int perRequest = Math.max(1, Math.min(MessageCodec.MAX_ITEMS, Math.min(
                (theirs.receiveBufferSize() - 32) / MAX_REQUESTED_BLOCK_BYTES, (config.receiveBufferSize() - 32) / MAX_DESCRIPTOR_BYTES)));
        long maxChainBytes = Math.max(256 << 10, config.maxBytesInFlightPerPeer() / config.maxChainsInFlightPerPeer());
        PeerFetcher f = new PeerFetcher(c, transport, new PeerFetcher.Limits(config.chainLength(), maxReadSge, maxChainBytes,
                config.maxBytesInFlightPerPeer(), config.maxChainsInFlightPerPeer(), perRequest, config.fetchTimeout().toNanos()));
        c.attach(f);
        register.accept(c);
        return f;
    }

    /** A retired connection's fetcher: forgotten, and the control connection to its peer ended with it. */
    public void forget(PeerFetcher f) {
        for (Map.Entry<InetSocketAddress, PeerFetcher> e : fetchers.entrySet()) {
            if (e.getValue() == f && fetchers.remove(e.getKey(), f)) {
                // The peer's queue pairs for us live as long as our control connection: end both.
                controlClients.disconnect(e.getKey());
            }
        }
    }

    /** Fails every fetcher (the engine is closing). */
    public void failAll(IOException cause) {
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
