package org.rdmashuffle.verbs.software;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One TCP connection between two software devices, carrying the frames of every QP pair between
 * them (as one wire carries every QP between two HCAs). The device with the larger (address, port)
 * dials; a QP joins with an ATTACH that carries the token from its peer QP's endpoint ({@link LinkJoins}),
 * and only QPs joined that way send or receive on the link: a link is not an authorization. Frames name both
 * QPs; one for a QP not joined here (or from another source QP) is dropped.
 *
 * <p>Threads: none of its own. The socket is non-blocking and served by a {@link LinkLoop} shared
 * with other links: the loop reads and dispatches frames, and writes what posting threads could not
 * write at once (a posting thread writes its frame itself when the writer is idle). Nothing waits
 * but the loop's selector (a SEND with no receive posted is refused with an RNR NAK, not held), so
 * one slow QP cannot stall the others. A lost link fails every QP on it, as a cut cable would.
 */
final class PeerLink implements LinkLoop.Handler {
    private static final System.Logger LOG = System.getLogger(PeerLink.class.getName());
    /**
     * Frames waiting to be written beyond which a request from the peer closes the link: a peer that
     * keeps asking without reading the answers would otherwise grow this queue without end. The
     * peer's QPs ask for at most their send queue's depth each, far below this.
     */
    static final int MAX_QUEUED_FRAMES = 16_384;
    /** How long a failing QP waits for the loop to be done copying into its memory before the link is cut. */
    private static final long QUIESCE_NANOS = TimeUnit.SECONDS.toNanos(5);

    private final SoftDevice device;
    private final SocketChannel channel;
    private final boolean inbound;
    /** The address dialled (outbound) or the peer's socket address (inbound). */
    private final InetSocketAddress peer;
    private final LinkLoop loop;
    private final FrameWriter writer;
    /**
     * Held by the loop while it copies into a QP's memory. A failing QP takes it once after it left
     * the link: after its error completions, the loop no longer touches its memory.
     */
    private final ReentrantLock landingLock = new ReentrantLock();
    private final FrameReader reader;
    /** Where the payload of the frame being read goes (one frame at a time: one per link). */
    private final Landing landing = new Landing();
    private volatile SelectionKey key;
    /** The QPs on this link, by local QPN. */
    private final Map<Integer, SoftQueuePair> joined = new ConcurrentHashMap<>();
    private final LinkJoins joins = new LinkJoins(this);
    /** Run once: when the first QP joins an inbound link, or when it closes before any did. */
    private final Runnable admitted;
    private final AtomicBoolean admittedOnce = new AtomicBoolean();
    /** Since when no QP is on the link (at first: since it opened). */
    private volatile long emptySince = System.nanoTime();
    private volatile boolean closed;
    /** The loop is dispatching what it read (read and written on the loop's thread only). */
    private boolean corked;
    /** The QP the last frame read was for (the loop's only): most frames on a link are for the QP the one before was. */
    private SoftQueuePair lastFor;

    private PeerLink(SoftDevice device, SocketChannel channel, boolean inbound, InetSocketAddress peer, Runnable admitted) {
        this.device = device;
        this.channel = channel;
        this.inbound = inbound;
        this.peer = peer;
        this.admitted = admitted;
        this.loop = device.loops().next();
        this.writer = new FrameWriter(channel, on -> {
            SelectionKey k = key;
            if (k != null) {
                loop.wantWritable(k, on);
            }
        });
        this.reader = new FrameReader(channel, landingLock);
        device.linkEmptied(emptySince); // closed if no QP joins in time
    }

    /**
     * Stops reading from the peer, as a process stopped by a signal does: what it sends waits in the
     * socket, unanswered and unacknowledged, and the connection stays open. For tests of what such a
     * peer costs the other side.
     */
    void stopReading() {
        loop.execute(() -> {
            SelectionKey k = key;
            if (k != null && k.isValid()) {
                k.interestOpsAnd(~SelectionKey.OP_READ);
            }
        });
    }

    /** Puts the (connected, greeted) channel on its loop; the link is closed if that fails. */
    PeerLink start() throws IOException {
        try {
            channel.configureBlocking(false);
            key = loop.register(channel, this);
            if (writer.waitingForRoom()) { // a frame found the socket full before the loop had the link
                loop.wantWritable(key, true);
            }
        } catch (IOException e) {
            close(e);
            throw e;
        }
        return this;
    }

    /** Dials the device listening at {@code address} and says hello; bounded by the dial timeout. */
    static PeerLink dial(SoftDevice device, InetSocketAddress address) throws IOException {
        SocketChannel ch = SocketChannel.open();
        try {
            // From the device's own address, as the engine's control connections come from it: left to the
            // kernel, a device on 127.1.0.7 (or one of a host's several addresses) dials from another, and
            // the peer counts it, and bounds its handshakes, under that address (issue 52 item 8).
            java.net.InetAddress local = device.listener().address().getAddress();
            if (!local.isAnyLocalAddress()) {
                ch.bind(new InetSocketAddress(local, 0));
            }
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
        return new PeerLink(device, ch, false, address, () -> { }).start();
    }

    /** An accepted connection past its hello; {@link #start} puts it on its loop. */
    static PeerLink accepted(SoftDevice device, SocketChannel ch, InetSocketAddress from, Runnable admitted) {
        return new PeerLink(device, ch, true, from, admitted);
    }

    boolean isClosed() {
        return closed;
    }

    SoftDevice device() {
        return device;
    }

    /** The address dialled, or the peer's. */
    InetSocketAddress peer() {
        return peer;
    }

    /** QPs joined here. */
    int queuePairs() {
        return joined.size();
    }

    // ---------------------------------------------------------------- joining and leaving

    /** Joins {@code qp} to its peer QP {@code peerQpn}, bounded; false if the link closed first (see {@link LinkJoins#attach}). */
    boolean attach(SoftQueuePair qp, int peerQpn, String token, String call) {
        return joins.attach(qp, peerQpn, token, call);
    }

    /** Joins a QP that an ATTACH admitted (the loop). */
    void join(SoftQueuePair qp) {
        qp.joinedTo = this;
        joined.put(qp.qpNumber(), qp);
        if (admittedOnce.compareAndSet(false, true)) {
            admitted.run();
        }
    }

    /**
     * {@code qp} leaves: its frames not yet written are dropped (what of them is being written is
     * copied first); with {@code tellPeer} its peer QP is told (DETACH). Returns once nothing on the
     * link touches its memory (bounded).
     */
    void leave(SoftQueuePair qp, int peerQpn, boolean tellPeer) {
        qp.joinedTo = null; // first: the loop stops finding it before it is out of the table
        if (joined.remove(qp.qpNumber(), qp)) {
            if (joined.isEmpty()) {
                long now = System.nanoTime();
                emptySince = now;
                device.linkEmptied(now);
            }
            if (!writer.detach(qp.qpNumber())) {
                closeLater(new IOException("a leaving QP had more than " + (FrameWriter.COPY_ON_LEAVE_MAX >> 20)
                        + " MiB being written (or its memory was gone): the link is cut"));
            } else if (tellPeer && !closed) {
                sendDetach(qp.qpNumber(), peerQpn);
            }
        }
        // Also when the link closed first (the QP was taken off it then): the loop may still be
        // copying an answer into this QP's memory, which must be over before its completions go out.
        quiesce();
    }

    private void quiesce() {
        try {
            if (landingLock.tryLock(QUIESCE_NANOS, TimeUnit.NANOSECONDS)) {
                landingLock.unlock();
                return;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        // A copy that does not end: cut the socket, which ends any transfer at once.
        closeChannel();
        landingLock.lock();
        landingLock.unlock();
        closeLater(new IOException("the link stalled for " + TimeUnit.NANOSECONDS.toSeconds(QUIESCE_NANOS) + " s while a QP left it"));
    }

    /** Closes the link on its loop, after what the caller holds is let go (a QP's lock, the writer). */
    private void closeLater(IOException cause) {
        if (!closed) {
            loop.execute(() -> close(cause));
        }
    }

    /** Tells QP {@code dstQpn} of the peer that our QP {@code srcQpn} left it. */
    void sendDetach(int srcQpn, int dstQpn) {
        Frame d = Frame.request(Frame.DETACH, 0);
        d.srcQpn = srcQpn;
        d.dstQpn = dstQpn;
        send(d);
    }

    /**
     * Writes a frame (from a QP joined here) now if the writer is idle and the socket takes it, else
     * queues it; dropped once the link is closed (its QPs fail anyway). Never waits. On the loop,
     * while it dispatches what it read, the frame waits for the end of that turn instead: the answers
     * to a burst of requests go out in one gathering write.
     */
    void send(Frame f) {
        send(f, !(corked && loop.inLoop()));
    }

    /** {@link #send(Frame)}, or with {@code now} false only queued: the caller {@link #flush}es after its last. */
    void send(Frame f, boolean now) {
        if (!closed) {
            writer.queue(f);
            if (now) {
                flush();
            }
        }
    }

    /** Writes what is queued, as far as the socket takes it now. */
    void flush() {
        if (!closed) {
            try {
                writer.flush();
            } catch (IOException e) {
                closeLater(e); // the caller may hold a QP's lock: closing fails every QP on the link
            }
        }
    }

    /**
     * When the link will have been without QPs (or, inbound, without its first join) for longer than
     * {@code nanos}: {@link Long#MAX_VALUE} while a QP is on it (its last one's leave says when it empties);
     * while a join waits for its answer, {@code nanos} from {@code now}, to look again.
     */
    long idleDeadline(long nanos, long now) {
        if (!joined.isEmpty()) {
            return Long.MAX_VALUE;
        }
        if (!joins.nonePending()) {
            return now + nanos;
        }
        return emptySince + nanos + 1;
    }

    boolean everJoined() {
        return admittedOnce.get();
    }

    // ---------------------------------------------------------------- the loop's calls

    @Override
    public void readable() {
        corked = true;
        try {
            if (!reader.readAvailable(this::dispatch)) {
                close(new EOFException("peer closed the connection"));
            }
        } catch (IOException e) {
            close(e);
        } catch (IllegalStateException e) {
            close(new IOException("target memory no longer available: " + e.getMessage(), e));
        } catch (RuntimeException | StackOverflowError e) { // a peer's frame this code did not foresee: the link fails, the loop goes on
            close(new IOException("malformed frame from the peer: " + e, e));
        } finally {
            corked = false;
            flush(); // the answers this turn queued
        }
    }

    @Override
    public void writable() {
        try {
            writer.onWritable();
        } catch (IOException e) {
            close(e);
        }
    }

    @Override
    public void loopClosed() {
        close(new IOException("software provider closed"));
    }

    /** Where the payload of the frame being read goes. */
    Landing landing() {
        return landing;
    }

    /** The next {@code n} payload bytes are skipped (null: none). */
    Landing skip(long n) {
        return n == 0 ? null : landing.skip(n);
    }

    /** Hands a frame's header to what it is for; returns where its payload goes (null: it has none). */
    private Landing dispatch(Frame f) throws IOException {
        switch (f.type) {
            case Frame.READ, Frame.WRITE, Frame.SEND, Frame.COMPARE_SWAP, Frame.FETCH_ADD, Frame.NOP -> {
                if (writer.queued() >= MAX_QUEUED_FRAMES) {
                    throw new IOException("the peer keeps sending requests without reading the answers ("
                            + MAX_QUEUED_FRAMES + " frames wait to be written)");
                }
                SoftQueuePair qp = joinedFor(f);
                return qp == null ? skip(f.payloadLength()) : qp.responder.onRequest(this, f);
            }
            case Frame.READ_RESPONSE, Frame.ACK, Frame.ATOMIC_RESPONSE, Frame.RNR_NAK -> {
                SoftQueuePair qp = joinedFor(f);
                return qp == null ? skip(f.payloadLength()) : qp.requester.onResponse(this, f);
            }
            case Frame.ATTACH -> {
                if (f.length > Frame.MAX_TOKEN) {
                    throw new IOException("malformed ATTACH: token of " + f.length + " bytes");
                }
                byte[] token = new byte[f.length];
                int srcQpn = f.srcQpn;
                int dstQpn = f.dstQpn;
                return landing.into(null, () -> joins.onAttach(srcQpn, dstQpn, new String(token, StandardCharsets.US_ASCII)))
                        .add(java.lang.foreign.MemorySegment.ofArray(token), 0, token.length);
            }
            case Frame.ATTACH_ACK -> {
                joins.onAttachAck(f);
                return null;
            }
            case Frame.DETACH -> {
                SoftQueuePair qp = joinedFor(f);
                if (qp != null) {
                    qp.peerLeft(this);
                }
                return null;
            }
            default -> throw new IOException("malformed frame: unknown type " + f.type);
        }
    }

    /** The QP a frame is for, if it joined this link with the frame's source as its peer; else null. */
    private SoftQueuePair joinedFor(Frame f) {
        SoftQueuePair qp = lastFor;
        if (qp == null || qp.qpNumber() != f.dstQpn || qp.joinedTo != this) {
            qp = joined.get(f.dstQpn); // boxes the number: only for a frame to another QP than the last one's
            lastFor = qp;
        }
        return qp != null && qp.peerQpn() == f.srcQpn ? qp : null;
    }

    /** Runs {@code landing} (a write into a QP's memory) unless the QP failed; the QP's leave waits for it. */
    boolean landUnless(SoftQueuePair qp, Runnable landing) {
        landingLock.lock();
        try {
            if (!qp.acceptsData()) {
                return false;
            }
            landing.run();
            return true;
        } finally {
            landingLock.unlock();
        }
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
        joins.linkClosed();
        for (SoftQueuePair qp : List.copyOf(joined.values())) {
            qp.joinedTo = null;
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
        loop.execute(() -> { }); // its selector lets go of the socket at its next turn
    }

    @Override
    public String toString() {
        return "software link " + (inbound ? "from " : "to ") + peer + " (" + joined.size() + " QPs)";
    }
}
