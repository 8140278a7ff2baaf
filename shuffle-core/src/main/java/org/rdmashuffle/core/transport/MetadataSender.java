package org.rdmashuffle.core.transport;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;

import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.protocol.MessageCodec;

/**
 * Sends metadata messages as SENDs from the send buffers of the connection's tenant: a slot is held
 * until its send completes. With every slot of a tenant in flight, its sends wait in that tenant's
 * queue (one application's backlog never holds up another's), encoded, and go out as its slots come
 * back. Thread-safe: pollers, server threads, fetch callers and the timer send.
 *
 * <p>Bounded against a reducer that asks and never takes its answers (never acknowledges a SEND, so
 * the slots stay in flight): a serving connection's send may be in flight at most the send deadline,
 * after which the connection fails ({@link #failLateSends}) and its slots come back once its queue
 * pairs are destroyed; a connection may have at most {@value #MAX_QUEUED_PER_CONNECTION} answers
 * waiting, and a tenant {@value #MAX_QUEUED_PER_TENANT} answers of at most {@value
 * #MAX_QUEUED_BYTES_PER_TENANT} bytes: beyond that the connection with the most waiting is closed and
 * its answers dropped. Only the tenant's own connections pay for its backlog.
 */
public final class MetadataSender {
    /**
     * Answers one connection may have waiting for a send slot: as many as a reducer's receive buffers
     * hold (srq.buffers' default), more than an honest reducer can take at once.
     */
    static final int MAX_QUEUED_PER_CONNECTION = 256;
    /** Answers, and their encoded bytes, one tenant may have waiting for its send slots. */
    static final int MAX_QUEUED_PER_TENANT = 1024;
    static final long MAX_QUEUED_BYTES_PER_TENANT = 4L << 20;

    /** What the sender tells the engine. */
    public interface Listener {
        /** A send could not be posted, completed in error, or was not taken: the connection is broken. */
        void connectionFailed(DataConnection c, Throwable cause);

        /** A send made with {@code closeAfter} completed: the connection may go now. */
        void retire(DataConnection c);
    }

    /**
     * A send waiting for a slot: the message encoded (so a waiting answer costs its bytes, not its
     * objects), and what to run once it is posted (null: nothing).
     */
    record QueuedSend(DataConnection connection, byte[] encoded, boolean closeAfter, Runnable posted) {
    }

    private record InFlightSend(int slot, DataConnection connection, boolean closeAfter, long postedAt) {
    }

    private final AtomicLong ids;
    private final ThreadLocal<MessageCodec> codec;
    private final Listener listener;
    private final long servingDeadlineNanos;
    /** Asks the engine's timer to look at the sends in flight by a deadline ({@link TransportContext#tickBy}). */
    private final java.util.function.LongConsumer checkBy;
    /** By sequence, so by the order they were posted: the oldest first. */
    private final ConcurrentSkipListMap<Long, InFlightSend> inFlight = new ConcurrentSkipListMap<>();
    /** Where a message to be queued is encoded before it is copied out. */
    private final ThreadLocal<MemorySegment> scratch = new ThreadLocal<>();
    private volatile MessageTamper tamper = MessageTamper.NONE;
    /** The most sends one tenant has had waiting at once (tests of the bound). */
    private volatile int peakQueued;

    /**
     * @param ids the engine's id counter (never repeats, shared with read chains)
     * @param codec the engine's per-thread codec
     * @param servingDeadlineMillis the longest a send to a reducer may stay in flight
     * @param checkBy called with a send's deadline (nanoTime) as it is posted: {@link #failLateSends} must run by then
     */
    public MetadataSender(AtomicLong ids, ThreadLocal<MessageCodec> codec, Listener listener, long servingDeadlineMillis,
                          java.util.function.LongConsumer checkBy) {
        this.ids = ids;
        this.checkBy = checkBy;
        this.codec = codec;
        this.listener = listener;
        this.servingDeadlineNanos = servingDeadlineMillis * 1_000_000L;
    }

    public void tamper(MessageTamper t) {
        tamper = t == null ? MessageTamper.NONE : t;
    }

    /** The test hook set, {@link MessageTamper#NONE} if none (the router shows it what is received). */
    MessageTamper tamper() {
        return tamper;
    }

    /** Sends {@code m} on {@code c}, now or when a slot of its tenant frees; {@code closeAfter}: retire {@code c} once sent. */
    public void send(DataConnection c, Message m, boolean closeAfter) {
        send(c, m, closeAfter, null);
    }

    /**
     * As {@link #send(DataConnection, Message, boolean)}, running {@code posted} (if not null) once the
     * message is posted to {@code c}'s queue pair: never if it is dropped first (its connection cut off
     * or retired while it waited for a slot) or cannot be posted. Throws an {@link
     * IllegalArgumentException} if {@code m} does not fit the peer's receive buffer even without layouts.
     */
    public void send(DataConnection c, Message m, boolean closeAfter, Runnable posted) {
        TenantDomain t = c.tenant();
        int slot = t.sendPool().acquire();
        if (slot >= 0) {
            if (post(c, m, slot, closeAfter) && posted != null) {
                posted.run();
            }
            return;
        }
        byte[] encoded = encodeToQueue(c, m);
        if (encoded == null) {
            return; // a test dropping the message
        }
        List<DataConnection> cutOff = new ArrayList<>(1);
        String why;
        synchronized (t.queuedSends) {
            if (c.queuedSends >= MAX_QUEUED_PER_CONNECTION) {
                why = "its peer has " + MAX_QUEUED_PER_CONNECTION + " answers waiting and takes none";
                dropQueued(t, c);
                cutOff.add(c);
            } else {
                why = "its application's answers waiting for send buffers reached the bound, and it had the most waiting";
                while (t.queuedSends.size() >= MAX_QUEUED_PER_TENANT
                        || t.queuedBytes + encoded.length > MAX_QUEUED_BYTES_PER_TENANT) {
                    DataConnection worst = largestQueue(t, c);
                    dropQueued(t, worst);
                    cutOff.add(worst);
                    if (worst == c) {
                        break;
                    }
                }
                if (!cutOff.contains(c)) {
                    t.queuedSends.add(new QueuedSend(c, encoded, closeAfter, posted));
                    t.queuedBytes += encoded.length;
                    c.queuedSends++;
                    peakQueued = Math.max(peakQueued, t.queuedSends.size());
                }
            }
        }
        for (DataConnection d : cutOff) {
            listener.connectionFailed(d, new IOException(why));
        }
        drain(t); // a slot freed since we looked would otherwise wait for the next completion
    }

    /** Under the tenant's queue: the connection with the most sends waiting ({@code c} if none waits more). */
    private static DataConnection largestQueue(TenantDomain t, DataConnection c) {
        DataConnection worst = c;
        for (QueuedSend q : t.queuedSends) {
            if (q.connection().queuedSends > worst.queuedSends) {
                worst = q.connection();
            }
        }
        return worst;
    }

    /** Under the tenant's queue: drops every send of {@code c} waiting there. */
    private static void dropQueued(TenantDomain t, DataConnection c) {
        for (Iterator<QueuedSend> it = t.queuedSends.iterator(); it.hasNext() && c.queuedSends > 0; ) {
            QueuedSend q = it.next();
            if (q.connection() == c) {
                it.remove();
                t.queuedBytes -= q.encoded().length;
                c.queuedSends--;
            }
        }
    }

    /** Encodes {@code m} into {@code slot} and posts it; false if a test dropped it. */
    private boolean post(DataConnection c, Message m, int slot, boolean closeAfter) {
        SendBufferPool pool = c.tenant().sendPool();
        MemorySegment buf = pool.slot(slot).asSlice(0, Math.min(pool.slotBytes(), c.peerReceiveBufferSize()));
        int length;
        try {
            MessageTamper t = tamper;
            Message out = t.message(c.role(), m);
            if (out == null) { // a test dropping the message
                pool.release(slot);
                return false;
            }
            length = t.bytes(c.role(), buf, encode(out, buf));
        } catch (RuntimeException e) {
            pool.release(slot);
            throw e;
        }
        postEncoded(c, slot, length, closeAfter);
        return true;
    }

    /** The bytes {@code m} will go out as, for a send that waits for a slot; null if a test drops it. */
    private byte[] encodeToQueue(DataConnection c, Message m) {
        SendBufferPool pool = c.tenant().sendPool();
        int size = Math.min(pool.slotBytes(), c.peerReceiveBufferSize());
        MemorySegment s = scratch.get();
        if (s == null || s.byteSize() < size) {
            s = MemorySegment.ofArray(new byte[pool.slotBytes()]);
            scratch.set(s);
        }
        MemorySegment buf = s.asSlice(0, size);
        MessageTamper t = tamper;
        Message out = t.message(c.role(), m);
        if (out == null) {
            return null;
        }
        int length = t.bytes(c.role(), buf, encode(out, buf));
        return buf.asSlice(0, length).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
    }

    private void postEncoded(DataConnection c, int slot, int length, boolean closeAfter) {
        SendBufferPool pool = c.tenant().sendPool();
        long seq = ids.incrementAndGet();
        long postedAt = System.nanoTime();
        inFlight.put(seq, new InFlightSend(slot, c, closeAfter, postedAt));
        checkBy.accept(TransportContext.after(postedAt, servingDeadlineNanos + 1)); // lock-free while a check is due by then
        try {
            c.postSend(WorkRequestIds.of(WorkRequestIds.SEND, seq), pool.slot(slot).address(), length, pool.lkey());
        } catch (RuntimeException e) {
            if (inFlight.remove(seq) != null) {
                pool.release(slot);
            }
            throw e;
        }
    }

    /**
     * Encodes {@code m} into the peer's receive-buffer size; an answer whose map-output layouts do not
     * fit goes without them (the reducer then asks for the outputs' other blocks as before): encoded
     * again, nothing described again, so at most twice the buffer's bytes of writing. One that does not
     * fit even so is an {@link IllegalArgumentException} naming its counts (never its items).
     */
    private int encode(Message m, MemorySegment buf) {
        MessageCodec c = codec.get();
        int length = c.tryEncode(m, buf);
        if (length < 0 && m instanceof Message.FetchResponse f && !f.layouts().isEmpty()) {
            length = c.tryEncode(f.withoutLayouts(), buf);
        }
        if (length < 0) {
            throw new IllegalArgumentException(MessageCodec.summary(m) + " does not fit the peer's " + buf.byteSize()
                    + "-byte receive buffer, even without layouts");
        }
        return length;
    }

    /** Posts the tenant's waiting sends while it has free slots. */
    private void drain(TenantDomain t) {
        while (true) {
            QueuedSend q;
            int slot;
            synchronized (t.queuedSends) {
                if (t.queuedSends.isEmpty() || t.isClosed()) {
                    return;
                }
                slot = t.sendPool().acquire();
                if (slot < 0) {
                    return;
                }
                q = t.queuedSends.poll();
                t.queuedBytes -= q.encoded().length;
                q.connection().queuedSends--;
            }
            MemorySegment.copy(q.encoded(), 0, t.sendPool().slot(slot), java.lang.foreign.ValueLayout.JAVA_BYTE, 0,
                    q.encoded().length);
            try {
                postEncoded(q.connection(), slot, q.encoded().length, q.closeAfter());
            } catch (RuntimeException e) { // the slot is back already (postEncoded gives it back when the post fails)
                listener.connectionFailed(q.connection(), e);
                continue;
            }
            if (q.posted() != null) {
                q.posted().run();
            }
        }
    }

    /** A SEND completion: the slot goes back, and a failure or a close-after is acted on. */
    public void onCompleted(long seq, boolean success, Throwable failure) {
        InFlightSend s = inFlight.remove(seq);
        if (s == null) {
            return; // of a retired connection
        }
        TenantDomain t = s.connection().tenant();
        t.sendPool().release(s.slot());
        if (!success) {
            listener.connectionFailed(s.connection(), failure);
        } else if (s.closeAfter()) {
            listener.retire(s.connection());
        }
        drain(t);
    }

    /**
     * Fails every serving connection with a send in flight for longer than the send deadline: its
     * peer takes no answers (it never acknowledges), and holds its application's send slots until
     * the connection's queue pairs are destroyed. For the engine's timer; costs the late sends only.
     *
     * @return when it must run next (nanoTime): the oldest send in flight past the deadline then, or
     *     {@link TransportContext#IDLE} with none in flight (a send posted later asks for its own)
     */
    public long failLateSends(long now) {
        List<DataConnection> late = null;
        long next = TransportContext.IDLE;
        for (InFlightSend s : inFlight.values()) { // oldest first
            if (now - s.postedAt() <= servingDeadlineNanos) {
                next = TransportContext.after(s.postedAt(), servingDeadlineNanos + 1);
                break;
            }
            next = now; // late, and still in flight until its connection is retired: looked at again next tick
            DataConnection c = s.connection();
            if (c.role() == DataConnection.Role.SERVING && !c.isClosing() && (late == null || !late.contains(c))) {
                (late == null ? late = new ArrayList<>() : late).add(c);
            }
        }
        if (late != null) {
            for (DataConnection c : late) {
                listener.connectionFailed(c, new IOException("an answer was not acknowledged within "
                        + servingDeadlineNanos / 1_000_000 + " ms"));
            }
        }
        return next;
    }

    /**
     * Forgets a retired connection (its QPs destroyed): its sends in flight give their slots back and
     * its waiting sends are dropped.
     */
    public void forget(DataConnection c) {
        TenantDomain t = c.tenant();
        for (Map.Entry<Long, InFlightSend> e : inFlight.entrySet()) {
            if (e.getValue().connection() == c && inFlight.remove(e.getKey()) != null) {
                t.sendPool().release(e.getValue().slot());
            }
        }
        synchronized (t.queuedSends) {
            dropQueued(t, c);
        }
        drain(t);
    }

    /** The most sends one tenant has had waiting for a slot at once, since the start. */
    public int peakQueued() {
        return peakQueued;
    }

    /** Sends in flight plus sends waiting, over every tenant given. */
    public int outstanding(Iterable<TenantDomain> tenants) {
        int n = inFlight.size();
        for (TenantDomain t : tenants) {
            synchronized (t.queuedSends) {
                n += t.queuedSends.size();
            }
        }
        return n;
    }
}
