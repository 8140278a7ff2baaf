package org.rdmashuffle.core.control;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Control connections to peers, one per peer, reused across calls. A connection found dropped is
 * replaced before the call; a call that fails because its connection dropped is retried once on a
 * new one (control requests are idempotent: endpoint exchange and metadata lookups). An error the
 * peer answered with, or a failed authentication, is not retried. All connections run on one group
 * of event loops the pool owns, of a fixed size (as Spark's {@code TransportClientFactory} shares
 * its worker group): a thousand peers cost connections, not threads. Connections to different
 * peers are set up concurrently; to one peer, once.
 */
public final class ControlClientPool implements AutoCloseable {
    private final byte[] secret;
    private final String appId;
    private final int maxFrameBytes;
    private final Duration timeout;
    private final java.net.InetAddress local;
    private final Map<InetSocketAddress, ControlClient> clients = new ConcurrentHashMap<>();
    /** One lock per peer being connected: set-ups to different peers do not wait for each other. */
    private final Map<InetSocketAddress, Object> connecting = new ConcurrentHashMap<>();
    private final io.netty.channel.EventLoopGroup group;
    private volatile boolean closed;

    /** @param secret the application's shared secret, or null with authentication off */
    public ControlClientPool(byte[] secret, String appId, int maxFrameBytes, Duration timeout) {
        this(secret, appId, maxFrameBytes, timeout, null, 1);
    }

    /**
     * @param local the address connections come from (null: any); see {@link ControlClient#connect}
     * @param threads the event-loop threads all connections share
     */
    public ControlClientPool(byte[] secret, String appId, int maxFrameBytes, Duration timeout, java.net.InetAddress local,
                             int threads) {
        this.group = ControlClient.newGroup(threads);
        this.secret = secret == null ? null : secret.clone();
        this.appId = appId;
        this.maxFrameBytes = maxFrameBytes;
        this.timeout = timeout;
        this.local = local;
    }

    public byte[] call(InetSocketAddress peer, byte type, byte[] payload) throws IOException {
        ControlClient client = client(peer);
        try {
            return client.call(type, payload, timeout);
        } catch (IOException e) {
            if (client.isOpen()) {
                throw e; // the peer answered: not a connection problem
            }
            evict(peer, client);
            return client(peer).call(type, payload, timeout);
        }
    }

    private ControlClient client(InetSocketAddress peer) throws IOException {
        if (closed) {
            throw new IllegalStateException("control client pool is closed");
        }
        ControlClient c = clients.get(peer);
        if (c != null && c.isOpen()) {
            return c;
        }
        if (c != null) {
            evict(peer, c);
        }
        synchronized (connecting.computeIfAbsent(peer, p -> new Object())) {
            c = clients.get(peer);
            if (c == null || !c.isOpen()) {
                c = ControlClient.connect(peer, secret, appId, maxFrameBytes, timeout, local, group);
                ControlClient replaced = clients.put(peer, c);
                if (replaced != null && replaced != c) {
                    replaced.close(); // a set-up raced ours after its lock was dropped with an eviction
                }
                if (closed) { // closing meanwhile: close() may have missed it
                    c.close();
                    throw new IllegalStateException("control client pool is closed");
                }
            }
            return c;
        }
    }

    private void evict(InetSocketAddress peer, ControlClient c) {
        if (clients.remove(peer, c)) {
            c.close();
            connecting.remove(peer);
        }
    }

    /**
     * A call on the live connection to {@code peer} only, never a new one: for requests about what that
     * connection set up. False if there is none (what it set up ended with it).
     */
    public boolean callIfConnected(InetSocketAddress peer, byte type, byte[] payload) throws IOException {
        ControlClient c = clients.get(peer);
        if (closed || c == null || !c.isOpen()) {
            return false;
        }
        c.call(type, payload, timeout);
        return true;
    }

    /** Closes the connection to {@code peer}, if any: the peer then drops what it set up for us. */
    public void disconnect(InetSocketAddress peer) {
        ControlClient c = clients.get(peer);
        if (c != null) {
            evict(peer, c);
        }
    }

    /** Whether a live, authenticated connection to {@code peer} exists now. */
    public boolean isConnected(InetSocketAddress peer) {
        ControlClient c = clients.get(peer);
        return c != null && c.isOpen();
    }

    /** Live connections: one per peer at most. */
    public int openConnections() {
        return (int) clients.values().stream().filter(ControlClient::isOpen).count();
    }

    @Override
    public void close() {
        closed = true;
        clients.values().forEach(ControlClient::close);
        clients.clear();
        connecting.clear();
        group.shutdownGracefully(0, 2, java.util.concurrent.TimeUnit.SECONDS).awaitUninterruptibly(3,
                java.util.concurrent.TimeUnit.SECONDS);
    }
}
