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
import java.security.SecureRandom;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
 * The software device: a TCP listener for links from other devices, the links this device dialled
 * ({@link PeerLink}: one per peer device, carrying all QPs between the two), and the table of its
 * QPs by number. The listener starts on first use; its accept thread is a daemon that ends when the
 * provider is closed. A link nothing uses for {@value #LINK_IDLE_SECONDS} s is closed, by a watcher
 * (a virtual thread) that sleeps until the earliest moment a link can have idled that long: while
 * every link has a QP on it, it does not wake at all, however many links there are.
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
    /** A link with no QP on it (an accepted one: none yet) is closed after this long. */
    static final long LINK_IDLE_SECONDS = 10;

    private final SoftwareProvider.Config config;
    private final long guid = new SecureRandom().nextLong();
    private final AtomicInteger nextQpn = new AtomicInteger(new SecureRandom().nextInt(1 << 16) + 1);
    final Map<Integer, SoftQueuePair> queuePairs = new ConcurrentHashMap<>();
    /** Links this device dialled, by the address dialled; each slot's monitor serialises its dial. */
    private final Map<InetSocketAddress, LinkSlot> dialled = new ConcurrentHashMap<>();
    /** Every open link, dialled or accepted. */
    private final Set<PeerLink> links = ConcurrentHashMap.newKeySet();
    private volatile Listener listener;
    /** The loops serving this device's links (shared with the process's other devices), from the listener's start. */
    private LinkLoop.Group loops;
    private Thread linkWatch;
    /** Guards {@link #nextLinkLook}; the watcher waits on it. */
    private final Object linkWatchLock = new Object();
    /** When the link watcher looks next (nanoTime); {@link Long#MAX_VALUE}: not until a link may idle. */
    private long nextLinkLook = Long.MAX_VALUE;
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

    /** QPs joined to a peer's over an open link. */
    int openConnections() {
        int n = 0;
        for (PeerLink l : links) {
            n += l.queuePairs();
        }
        return n;
    }

    /** Every open link stops reading (see {@link PeerLink#stopReading}): the device goes silent. */
    void stopReading() {
        links.forEach(PeerLink::stopReading);
    }

    /** Open links (TCP connections), dialled and accepted. */
    int openLinks() {
        return links.size();
    }

    private static final class LinkSlot {
        PeerLink link;
    }

    /** The link to the device listening at {@code address}: the open one, or a new one dialled now (bounded). */
    PeerLink linkTo(InetSocketAddress address) throws IOException {
        LinkSlot slot = dialled.computeIfAbsent(address, a -> new LinkSlot());
        synchronized (slot) {
            if (slot.link == null || slot.link.isClosed()) {
                if (closed) {
                    throw new IOException("software provider is closed");
                }
                slot.link = PeerLink.dial(this, address);
                links.add(slot.link);
                if (closed) { // closed while dialling: this link must not outlive the device
                    slot.link.close(new IOException("software provider is closed"));
                }
            }
            return slot.link;
        }
    }

    /** A closed link leaves the table (its slot stays: one small object per peer address ever dialled). */
    void forget(PeerLink link) {
        links.remove(link);
    }

    /** Whether read answers from files the regions own go out with sendfile ({@link SoftwareProvider#SETTING_SENDFILE}). */
    boolean sendsFiles() {
        return config.sendfile();
    }

    boolean admits(int qpn, String presented, String issued) {
        return config.admission().admit(qpn, presented, issued);
    }

    /** Logs (at most once a minute, with a count) a refused connection or join. */
    void refused(String what) {
        listener().refusals().warn("software provider: " + what);
    }

    /**
     * A link has had no QP on it since {@code emptySince} (it opened, or its last QP left): the watcher
     * looks at the links by the time it would have idled, sooner if it already meant to. Any thread.
     */
    void linkEmptied(long emptySince) {
        lookAtLinksBy(emptySince + TimeUnit.SECONDS.toNanos(LINK_IDLE_SECONDS) + 1);
    }

    private void lookAtLinksBy(long nanoTime) {
        synchronized (linkWatchLock) {
            if (nanoTime < nextLinkLook) {
                nextLinkLook = nanoTime;
                linkWatchLock.notifyAll();
            }
        }
    }

    /**
     * Closes links nobody uses: accepted ones no QP joined in time, and ones whose QPs all left. Sleeps
     * until the earliest deadline a look found or a link emptied since set (close interrupts it).
     */
    private void watchLinks() {
        long idle = TimeUnit.SECONDS.toNanos(LINK_IDLE_SECONDS);
        while (!closed) {
            try {
                synchronized (linkWatchLock) {
                    for (long wait; !closed && (wait = nextLinkLook - System.nanoTime()) > 0; ) {
                        if (nextLinkLook == Long.MAX_VALUE) {
                            linkWatchLock.wait();
                        } else {
                            TimeUnit.NANOSECONDS.timedWait(linkWatchLock, wait);
                        }
                    }
                    nextLinkLook = Long.MAX_VALUE; // a link emptied from now on sets it again, seen after this look
                }
            } catch (InterruptedException e) {
                return;
            }
            long now = System.nanoTime();
            long next = Long.MAX_VALUE;
            for (PeerLink l : links) {
                long due = l.idleDeadline(idle, now);
                if (due <= now) {
                    l.close(new IOException(l.everJoined() ? "idle: no QP on it for " + LINK_IDLE_SECONDS + " s"
                            : "no QP joined within " + LINK_IDLE_SECONDS + " s"));
                } else {
                    next = Math.min(next, due);
                }
            }
            if (next != Long.MAX_VALUE) {
                lookAtLinksBy(next);
            }
        }
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
                    loops = LinkLoop.Group.acquire();
                    listener = new Listener();
                    linkWatch = Thread.ofVirtual().name("rdma-soft-link-watch").start(this::watchLinks);
                }
                l = listener;
            }
        }
        return l;
    }

    /** The loops for this device's links. */
    LinkLoop.Group loops() {
        listener();
        return loops;
    }

    void close() {
        LinkLoop.Group g;
        synchronized (this) {
            closed = true;
            g = loops;
        }
        for (SoftQueuePair qp : queuePairs.values()) {
            qp.close();
        }
        Listener l = listener;
        if (l != null) {
            l.close();
        }
        for (PeerLink link : List.copyOf(links)) {
            link.close(new IOException("software provider closed"));
        }
        Thread w = linkWatch;
        if (w != null) {
            w.interrupt();
        }
        if (g != null) {
            LinkLoop.Group.release(g);
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
                SocketChannel accepted = channel;
                WaitingConnections.Place place = waitingHellos.enter(from, () -> closeQuietly(accepted));
                if (place.refusal() != null) {
                    refusals.warn("software provider: closed a data connection from " + from + " at once: " + place.refusal());
                    closeQuietly(channel);
                    continue;
                }
                // The hello is read off the accept thread, so a peer that never sends one cannot stall others;
                // then the link goes to its loop. The connection counts as waiting until a QP joins over it.
                // (The link runs that leave once, at its first join or its close.)
                Thread.ofVirtual().name("rdma-soft-link-hello").start(() -> {
                    PeerLink link = null;
                    try {
                        link = admit(channel, () -> waitingHellos.leave(place));
                    } finally {
                        if (link == null) {
                            waitingHellos.leave(place);
                        }
                    }
                });
            }
        }

        /** Reads the link hello; the admitted link (not yet read from), or null when refused. */
        private PeerLink admit(SocketChannel channel, Runnable joined) {
            String peer = "?";
            try {
                InetSocketAddress from = (InetSocketAddress) channel.getRemoteAddress();
                peer = String.valueOf(from);
                Socket socket = channel.socket();
                socket.setSoTimeout(HELLO_TIMEOUT_MILLIS);
                socket.setTcpNoDelay(true);
                int magic = new DataInputStream(socket.getInputStream()).readInt();
                if (magic != Frame.HELLO_MAGIC) {
                    reject(channel, peer, "malformed hello");
                    return null;
                }
                socket.setSoTimeout(0);
                PeerLink link;
                synchronized (SoftDevice.this) {
                    if (closed) {
                        reject(channel, peer, "the provider is closing");
                        return null;
                    }
                    new DataOutputStream(socket.getOutputStream()).writeInt(0);
                    link = PeerLink.accepted(SoftDevice.this, channel, from, joined);
                    links.add(link);
                }
                try {
                    link.start();
                } catch (IOException e) { // closed by it (and left the table): refused like a failed hello
                    refusals.warn("software provider: data connection from " + peer + " failed to start: " + e.getMessage());
                }
                return link;
            } catch (IOException e) {
                reject(channel, peer, "hello failed: " + e.getMessage());
                return null;
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
