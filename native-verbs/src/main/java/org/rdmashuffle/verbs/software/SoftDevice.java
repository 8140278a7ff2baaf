package org.rdmashuffle.verbs.software;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.rdmashuffle.verbs.Gid;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsDevice;
import org.rdmashuffle.verbs.util.RepeatedWarning;
import org.rdmashuffle.verbs.util.WaitingConnections;

/**
 * The software device: a TCP listener that admits data connections for this device's queue pairs,
 * and the table of those QPs by number. The listener starts on first use; its accept thread is a
 * daemon that ends when the provider is closed.
 */
final class SoftDevice implements VerbsDevice {
    private static final System.Logger LOG = System.getLogger(SoftDevice.class.getName());
    private static final int HELLO_TIMEOUT_MILLIS = 10_000;
    /**
     * Connections accepted and still waiting for their hello, from all peers and from one address.
     * Beyond either a new connection is closed at once: a peer opening thousands and saying nothing
     * holds no more than its share of sockets here, and leaves room for everyone else's.
     */
    static final int MAX_WAITING_HELLOS = 1024;
    static final int MAX_WAITING_HELLOS_PER_ADDRESS = 256;
    private static final long ACCEPT_FAILED_PAUSE_MILLIS = 50;

    private final SoftwareProvider.Config config;
    private final long guid = new SecureRandom().nextLong();
    private final AtomicInteger nextQpn = new AtomicInteger(new SecureRandom().nextInt(1 << 16) + 1);
    final Map<Integer, SoftQueuePair> queuePairs = new ConcurrentHashMap<>();
    private volatile Listener listener;
    private volatile boolean closed;

    SoftDevice(SoftwareProvider.Config config) {
        this.config = config;
    }

    @Override
    public String name() {
        return "soft0";
    }

    @Override
    public long guid() {
        return guid;
    }

    @Override
    public VerbsContext open() {
        listener();
        return new SoftContext(this);
    }

    SoftQueuePair createQueuePair(SoftProtectionDomain pd, QueuePairConfig config) {
        int qpn = nextQpn.getAndIncrement() & 0xFFFFFF;
        SoftQueuePair qp = new SoftQueuePair(this, pd, qpn, config);
        queuePairs.put(qpn, qp);
        return qp;
    }

    void forget(SoftQueuePair qp) {
        queuePairs.remove(qp.qpNumber(), qp);
    }

    int openConnections() {
        int n = 0;
        for (SoftQueuePair qp : queuePairs.values()) {
            if (qp.isConnected()) {
                n++;
            }
        }
        return n;
    }

    /** The listener, started on first use. */
    Listener listener() {
        Listener l = listener;
        if (l == null) {
            synchronized (this) {
                if (closed) {
                    throw new IllegalStateException("software provider is closed");
                }
                if (listener == null) {
                    listener = new Listener();
                }
                l = listener;
            }
        }
        return l;
    }

    void close() {
        synchronized (this) {
            closed = true;
        }
        for (SoftQueuePair qp : queuePairs.values()) {
            qp.close();
        }
        Listener l = listener;
        if (l != null) {
            l.close();
        }
    }

    /** Accepts data connections and hands each, after its hello, to the QP it names. */
    final class Listener implements Runnable {
        private final ServerSocketChannel server;
        private final Thread thread;
        private final InetSocketAddress address;
        private final WaitingConnections waitingHellos = new WaitingConnections(MAX_WAITING_HELLOS, MAX_WAITING_HELLOS_PER_ADDRESS);
        /** A peer decides how often we refuse it: the log says so once in a while, with a count. */
        private final RepeatedWarning refusals = new RepeatedWarning(LOG, 60, TimeUnit.SECONDS);

        Listener() {
            try {
                server = ServerSocketChannel.open();
                server.bind(new InetSocketAddress(config.bindAddress(), config.port()), 128);
                address = (InetSocketAddress) server.getLocalAddress();
            } catch (IOException e) {
                throw new UncheckedIOException("software provider cannot listen on " + config.bindAddress() + ":" + config.port(), e);
            }
            if (!(address.getAddress() instanceof Inet4Address)) {
                throw new IllegalArgumentException("the software provider needs an IPv4 bind address, not " + address);
            }
            thread = Thread.ofPlatform().daemon().name("rdma-soft-listener-" + address.getPort()).start(this);
        }

        int port() {
            return address.getPort();
        }

        InetSocketAddress address() {
            return address;
        }

        /** The listener's IPv4 address as an IPv4-mapped GID. */
        Gid gid() {
            return Gid.ipv4Mapped((Inet4Address) address.getAddress());
        }

        @Override
        public void run() {
            while (server.isOpen()) {
                SocketChannel channel;
                try {
                    channel = server.accept();
                } catch (IOException e) {
                    if (server.isOpen()) {
                        // E.g. out of file descriptors: it fails again at once, so pause rather than spin.
                        refusals.warn("software provider: accept failed: " + e);
                        try {
                            Thread.sleep(ACCEPT_FAILED_PAUSE_MILLIS);
                        } catch (InterruptedException interrupted) {
                            return;
                        }
                    }
                    continue;
                }
                InetAddress from = remoteOf(channel);
                String full = waitingHellos.enter(from);
                if (full != null) {
                    refusals.warn("software provider: closed a data connection from " + from + " at once: " + full);
                    closeQuietly(channel);
                    continue;
                }
                // The hello is read off the accept thread, so a peer that never sends one cannot stall others.
                Thread.ofVirtual().name("rdma-soft-hello").start(() -> {
                    try {
                        admit(channel);
                    } finally {
                        waitingHellos.leave(from);
                    }
                });
            }
        }

        private void admit(SocketChannel channel) {
            String peer = "?";
            try {
                peer = String.valueOf(channel.getRemoteAddress());
                Socket socket = channel.socket();
                socket.setSoTimeout(HELLO_TIMEOUT_MILLIS);
                socket.setTcpNoDelay(true);
                DataInputStream in = new DataInputStream(socket.getInputStream());
                int magic = in.readInt();
                int srcQpn = in.readInt();
                int dstQpn = in.readInt();
                int tokenLength = in.readInt();
                if (magic != Frame.HELLO_MAGIC || tokenLength < 0 || tokenLength > Frame.MAX_TOKEN) {
                    reject(channel, peer, "malformed hello");
                    return;
                }
                String token = new String(in.readNBytes(tokenLength), StandardCharsets.US_ASCII);
                SoftQueuePair qp = queuePairs.get(dstQpn);
                if (qp == null) {
                    reject(channel, peer, "no QP " + dstQpn);
                    return;
                }
                if (!config.admission().admit(dstQpn, token, qp.issuedToken())) {
                    reject(channel, peer, "invalid admission token for QP " + dstQpn);
                    return;
                }
                socket.setSoTimeout(0);
                if (!qp.accept(channel, srcQpn)) {
                    reject(channel, peer, "QP " + dstQpn + " is not waiting for a connection");
                    return;
                }
                new DataOutputStream(socket.getOutputStream()).writeInt(0);
            } catch (IOException e) {
                reject(channel, peer, "hello failed: " + e.getMessage());
            }
        }

        private void reject(SocketChannel channel, String peer, String why) {
            refusals.warn("software provider: refused data connection from " + peer + ": " + why);
            try (channel) {
                if (channel.isOpen()) {
                    new DataOutputStream(channel.socket().getOutputStream()).writeInt(1);
                }
            } catch (IOException ignored) {
                // closing anyway
            }
        }

        private static InetAddress remoteOf(SocketChannel channel) {
            try {
                return ((InetSocketAddress) channel.getRemoteAddress()).getAddress();
            } catch (IOException | RuntimeException e) {
                return InetAddress.getLoopbackAddress(); // gone already: counted with the local ones, closed soon
            }
        }

        private static void closeQuietly(SocketChannel channel) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // refused anyway
            }
        }

        /** Connections accepted and not yet past their hello (tests watch it). */
        int waitingHellos() {
            return waitingHellos.total();
        }

        /** Data connections refused (and how many of those were logged at WARNING). */
        RepeatedWarning refusals() {
            return refusals;
        }

        void close() {
            try {
                server.close();
                thread.join(2000);
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "software provider: closing listener failed", e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
