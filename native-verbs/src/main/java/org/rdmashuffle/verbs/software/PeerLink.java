package org.rdmashuffle.verbs.software;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;

import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.VerbsException;

/**
 * One TCP connection between two software devices, carrying the frames of every QP pair between
 * them (as one wire carries every QP between two HCAs). The device with the larger (address, port)
 * dials; a QP joins with an ATTACH that carries the token from its peer QP's endpoint, and only QPs
 * joined that way send or receive on the link: a link is not an authorization. Frames name both
 * QPs; one for a QP not joined here (or from another source QP) is dropped.
 *
 * <p>Threads: a reader and a writer, virtual, for the link's life. The reader never waits for
 * anything but the socket (a SEND with no receive posted is refused with an RNR NAK, not held), so
 * one slow QP cannot stall the others. A lost link fails every QP on it, as a cut cable would.
 */
final class PeerLink {
    private static final System.Logger LOG = System.getLogger(PeerLink.class.getName());
    /** How long a failing QP waits for the reader or writer to be done with its memory before the link is cut. */
    private static final long QUIESCE_NANOS = TimeUnit.SECONDS.toNanos(5);

    private final SoftDevice device;
    private final SocketChannel channel;
    private final boolean inbound;
    /** The address dialled (outbound) or the peer's socket address (inbound). */
    private final InetSocketAddress peer;
    private final FrameWriter writer = new FrameWriter();
    /**
     * Held by the reader while it writes into a QP's memory. A failing QP takes it once after it left
     * the link: after its error completions, the reader no longer touches its memory.
     */
    private final ReentrantLock reading = new ReentrantLock();
    /** The QPs on this link, by local QPN. */
    private final Map<Integer, SoftQueuePair> joined = new ConcurrentHashMap<>();
    /** Dialling QPs waiting for their ATTACH_ACK, by local QPN. */
    private final Map<Integer, Attaching> attaching = new ConcurrentHashMap<>();
    /** Run once: when the first QP joins an inbound link, or when it closes before any did. */
    private final Runnable admitted;
    private final AtomicBoolean admittedOnce = new AtomicBoolean();
    /** Since when no QP is on the link (at first: since it opened). */
    private volatile long emptySince = System.nanoTime();
    private volatile boolean closed;
    private Thread readerThread;
    private Thread writerThread;

    private record Attaching(SoftQueuePair qp, int peerQpn, CompletableFuture<Integer> verdict) {
    }

    /** Verdicts of a join besides 0 (joined): the link closed first, the peer refused, our QP failed meanwhile. */
    private static final int LINK_CLOSED = -1;
    private static final int REFUSED = 1;
    private static final int FAILED_MEANWHILE = 2;

    private PeerLink(SoftDevice device, SocketChannel channel, boolean inbound, InetSocketAddress peer, Runnable admitted) {
        this.device = device;
        this.channel = channel;
        this.inbound = inbound;
        this.peer = peer;
        this.admitted = admitted;
    }

    /** Dials the device listening at {@code address} and says hello; bounded by the dial timeout. */
    static PeerLink dial(SoftDevice device, InetSocketAddress address) throws IOException {
        SocketChannel ch = SocketChannel.open();
        try {
            // Bounded: a peer's endpoint names the address, and a black hole must not hold this thread.
            ch.socket().connect(address, SoftQueuePair.DIAL_TIMEOUT_MILLIS);
            ch.socket().setTcpNoDelay(true);
            ch.socket().setSoTimeout(SoftQueuePair.DIAL_TIMEOUT_MILLIS);
            DataOutputStream out = new DataOutputStream(ch.socket().getOutputStream());
            out.writeInt(Frame.HELLO_MAGIC);
            out.flush();
            int verdict = new DataInputStream(ch.socket().getInputStream()).readInt();
            if (verdict != 0) {
                throw new IOException("peer " + address + " refused the link (another version of the software provider?)");
            }
            ch.socket().setSoTimeout(0);
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
        PeerLink link = new PeerLink(device, ch, false, address, () -> { });
        link.readerThread = Thread.ofVirtual().name("rdma-soft-link-reader-" + address).start(link::readLoop);
        link.startWriter();
        return link;
    }

    /** An accepted connection past its hello; the caller's thread becomes its reader ({@link #readLoop}). */
    static PeerLink accepted(SoftDevice device, SocketChannel ch, InetSocketAddress from, Runnable admitted) {
        PeerLink link = new PeerLink(device, ch, true, from, admitted);
        link.readerThread = Thread.currentThread();
        link.startWriter();
        return link;
    }

    private void startWriter() {
        writerThread = Thread.ofVirtual().name("rdma-soft-link-writer-" + peer).start(() -> {
            try {
                writer.run(channel);
            } catch (IOException e) {
                close(e);
            } catch (IllegalStateException e) {
                // The memory a queued frame points at was freed (a region closed under a pending read).
                close(new IOException("frame memory no longer available: " + e.getMessage(), e));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
    }

    boolean isClosed() {
        return closed;
    }

    /** QPs joined here. */
    int queuePairs() {
        return joined.size();
    }

    // ---------------------------------------------------------------- joining and leaving

    /**
     * Joins {@code qp} to its peer QP {@code peerQpn} with the peer's {@code token}, waiting (bounded)
     * for the answer. False if the link closed first (the caller dials a new one).
     */
    boolean attach(SoftQueuePair qp, int peerQpn, String token, String call) {
        Attaching a = new Attaching(qp, peerQpn, new CompletableFuture<>());
        synchronized (this) {
            if (closed) {
                return false;
            }
            attaching.put(qp.qpNumber(), a);
        }
        try {
            byte[] secret = token.getBytes(StandardCharsets.US_ASCII);
            Frame f = Frame.request(Frame.ATTACH, 0);
            f.srcQpn = qp.qpNumber();
            f.dstQpn = peerQpn;
            f.length = secret.length;
            f.payload = new java.nio.ByteBuffer[] {java.nio.ByteBuffer.wrap(secret)};
            writer.add(f);
            int verdict = a.verdict().get(SoftQueuePair.DIAL_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            if (verdict == LINK_CLOSED) {
                return false;
            }
            if (verdict == FAILED_MEANWHILE) {
                throw new VerbsException(call, Errno.EINVAL, "QP " + qp.qpNumber() + " failed or closed while joining");
            }
            if (verdict != 0) {
                throw new VerbsException(call, Errno.ECONNREFUSED, "peer " + peer + " refused the data connection for QP "
                        + peerQpn + " (wrong or expired admission token?)");
            }
            return true;
        } catch (TimeoutException e) {
            throw new VerbsException(call, Errno.ETIMEDOUT, "peer " + peer + " did not answer the join of QP " + peerQpn
                    + " within " + SoftQueuePair.DIAL_TIMEOUT_MILLIS + " ms");
        } catch (ExecutionException e) {
            throw new VerbsException(call, Errno.ECONNREFUSED, "cannot reach peer " + peer + ": " + e.getCause().getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new VerbsException(call, Errno.EINTR, "interrupted while joining QP " + peerQpn + " at " + peer);
        } finally {
            attaching.remove(qp.qpNumber(), a);
        }
    }

    /** Joins a QP that an ATTACH admitted (reader thread). */
    private void join(SoftQueuePair qp) {
        joined.put(qp.qpNumber(), qp);
        if (admittedOnce.compareAndSet(false, true)) {
            admitted.run();
        }
    }

    /**
     * {@code qp} leaves: its frames not yet written are dropped; with {@code tellPeer} its peer QP is
     * told (DETACH). Returns once neither the reader nor the writer touches its memory (bounded: a link
     * stuck that long is cut).
     */
    void leave(SoftQueuePair qp, int peerQpn, boolean tellPeer) {
        if (joined.remove(qp.qpNumber(), qp)) {
            if (joined.isEmpty()) {
                emptySince = System.nanoTime();
            }
            writer.removeFrom(qp.qpNumber());
            if (tellPeer && !closed) {
                sendDetach(qp.qpNumber(), peerQpn);
            }
        }
        // Also when the link closed first (the QP was taken off it then): its reader may still be
        // copying an answer into this QP's memory, which must be over before its completions go out.
        quiesce();
    }

    private void quiesce() {
        try {
            boolean idle = writer.awaitIdle(QUIESCE_NANOS);
            if (idle && reading.tryLock(QUIESCE_NANOS, TimeUnit.NANOSECONDS)) {
                reading.unlock();
                return;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        // Stuck on a peer that neither reads nor writes: cut the socket, which ends any transfer at once.
        closeChannel();
        reading.lock();
        reading.unlock();
        if (!closed) {
            Thread.ofVirtual().start(() -> close(new IOException("the link stalled for "
                    + TimeUnit.NANOSECONDS.toSeconds(QUIESCE_NANOS) + " s while a QP left it")));
        }
    }

    /** Tells QP {@code dstQpn} of the peer that our QP {@code srcQpn} left it. */
    private void sendDetach(int srcQpn, int dstQpn) {
        Frame d = Frame.request(Frame.DETACH, 0);
        d.srcQpn = srcQpn;
        d.dstQpn = dstQpn;
        writer.add(d);
    }

    /** Queues a frame (from a QP joined here); dropped once the link is closed (its QPs fail anyway). */
    void send(Frame f) {
        if (!closed) {
            writer.add(f);
        }
    }

    /** Whether the link has been without QPs (or, inbound, without its first join) for longer than {@code nanos}. */
    boolean unusedFor(long nanos, long now) {
        if (!joined.isEmpty() || !attaching.isEmpty()) {
            return false;
        }
        return now - emptySince > nanos;
    }

    boolean everJoined() {
        return admittedOnce.get();
    }

    // ---------------------------------------------------------------- reading

    /** Reads frames until the link ends; each goes to the QP it names. */
    void readLoop() {
        FrameReader in = new FrameReader(channel);
        Frame f = new Frame(); // one per link, filled by each header it reads
        try {
            while (in.next(f)) {
                dispatch(in, f);
            }
            close(new EOFException("peer closed the connection"));
        } catch (IOException e) {
            close(e);
        } catch (IllegalStateException e) {
            close(new IOException("target memory no longer available: " + e.getMessage(), e));
        } catch (RuntimeException e) { // a peer's frame this code did not foresee: the link fails, the thread ends cleanly
            close(new IOException("malformed frame from the peer: " + e, e));
        }
    }

    private void dispatch(FrameReader in, Frame f) throws IOException {
        switch (f.type) {
            case Frame.READ, Frame.WRITE, Frame.SEND, Frame.COMPARE_SWAP, Frame.FETCH_ADD, Frame.NOP -> {
                SoftQueuePair qp = joinedFor(f);
                if (qp == null) {
                    in.discard(f.payloadLength());
                } else {
                    qp.responder.onRequest(this, in, f);
                }
            }
            case Frame.READ_RESPONSE, Frame.ACK, Frame.ATOMIC_RESPONSE, Frame.RNR_NAK -> {
                SoftQueuePair qp = joinedFor(f);
                if (qp == null) {
                    in.discard(f.payloadLength());
                } else {
                    qp.requester.onResponse(this, in, f);
                }
            }
            case Frame.ATTACH -> onAttach(in, f);
            case Frame.ATTACH_ACK -> {
                Attaching a = attaching.get(f.dstQpn);
                if (a != null && a.peerQpn() == f.srcQpn) {
                    int verdict = f.status == 0 ? 0 : REFUSED;
                    // Joined before the dialling thread wakes: the peer's first frames may follow at once.
                    if (verdict == 0 && a.qp().joined(this, f.srcQpn)) {
                        join(a.qp());
                    } else if (verdict == 0) {
                        verdict = FAILED_MEANWHILE; // our QP failed or closed while joining: the peer's leaves too
                        sendDetach(f.dstQpn, f.srcQpn);
                    }
                    a.verdict().complete(verdict);
                }
            }
            case Frame.DETACH -> {
                SoftQueuePair qp = joinedFor(f);
                if (qp != null) {
                    qp.peerLeft(this);
                }
            }
            default -> throw new IOException("malformed frame: unknown type " + f.type);
        }
    }

    /** The QP a frame is for, if it joined this link with the frame's source as its peer; else null. */
    private SoftQueuePair joinedFor(Frame f) {
        SoftQueuePair qp = joined.get(f.dstQpn);
        return qp != null && qp.peerQpn() == f.srcQpn ? qp : null;
    }

    private void onAttach(FrameReader in, Frame f) throws IOException {
        if (f.length < 0 || f.length > Frame.MAX_TOKEN) {
            throw new IOException("malformed ATTACH: token of " + f.length + " bytes");
        }
        String token = new String(in.readBytes(f.length), StandardCharsets.US_ASCII);
        SoftQueuePair qp = device.queuePairs.get(f.dstQpn);
        String refusal = null;
        if (qp == null) {
            refusal = "no QP " + f.dstQpn;
        } else if (!device.admits(f.dstQpn, token, qp.issuedToken())) {
            refusal = "invalid admission token for QP " + f.dstQpn;
        } else if (!qp.acceptJoin(this, f.srcQpn)) {
            refusal = "QP " + f.dstQpn + " is not waiting for a connection";
        }
        Frame ack = Frame.response(Frame.ATTACH_ACK, 0, refusal == null ? 0 : 1);
        ack.srcQpn = f.dstQpn;
        ack.dstQpn = f.srcQpn;
        if (refusal == null) {
            join(qp);
            writer.add(ack);
            return;
        }
        device.refused("refused QP " + f.dstQpn + " to a peer at " + peer + ": " + refusal);
        if (!everJoined()) {
            // Nobody uses this link: answer and hang up, as a refused connection always was.
            writer.writeNow(channel, ack);
            throw new IOException("refused the link's first join: " + refusal);
        }
        writer.add(ack);
    }

    /** Runs {@code landing} (a write into a QP's memory) unless the QP failed; the QP's leave waits for it. */
    boolean landUnless(SoftQueuePair qp, IoAction landing) throws IOException {
        reading.lock();
        try {
            if (!qp.acceptsData()) {
                return false;
            }
            landing.run();
            return true;
        } finally {
            reading.unlock();
        }
    }

    @FunctionalInterface
    interface IoAction {
        void run() throws IOException;
    }

    // ---------------------------------------------------------------- closing

    /** Closes the link: every QP on it fails (the peer is unreachable), every join in progress is refused. */
    void close(IOException cause) {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        LOG.log(System.Logger.Level.DEBUG, "software link " + (inbound ? "from " : "to ") + peer + " closed: " + cause.getMessage());
        device.forget(this);
        writer.stop();
        closeChannel();
        if (admittedOnce.compareAndSet(false, true)) {
            admitted.run();
        }
        for (Attaching a : List.copyOf(attaching.values())) {
            a.verdict().complete(LINK_CLOSED);
        }
        for (SoftQueuePair qp : List.copyOf(joined.values())) {
            joined.remove(qp.qpNumber(), qp);
            qp.linkLost(this, cause);
        }
    }

    private void closeChannel() {
        try {
            channel.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    /** Waits (bounded) for the link's threads after {@link #close}. */
    void awaitThreads() {
        for (Thread t : new Thread[] {readerThread, writerThread}) {
            if (t != null && t != Thread.currentThread()) {
                try {
                    t.join(2000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    @Override
    public String toString() {
        return "software link " + (inbound ? "from " : "to ") + peer + " (" + joined.size() + " QPs)";
    }
}
