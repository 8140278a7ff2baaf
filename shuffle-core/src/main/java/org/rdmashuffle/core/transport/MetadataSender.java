package org.rdmashuffle.core.transport;

import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.protocol.MessageCodec;

/**
 * Sends metadata messages as SENDs from the send buffers of the connection's tenant: a slot is held
 * until its send completes. With every slot of a tenant in flight, its sends wait in that tenant's
 * queue (one application's backlog never holds up another's) and go out as its slots come back.
 * Thread-safe: pollers, server threads, fetch callers and the timer send.
 */
public final class MetadataSender {
    /** What the sender tells the engine. */
    public interface Listener {
        /** A send could not be posted, or completed in error: the connection is broken. */
        void connectionFailed(DataConnection c, Throwable cause);

        /** A send made with {@code closeAfter} completed: the connection may go now. */
        void retire(DataConnection c);
    }

    record QueuedSend(DataConnection connection, Message message, boolean closeAfter) {
    }

    private record InFlightSend(int slot, DataConnection connection, boolean closeAfter) {
    }

    private final AtomicLong ids;
    private final ThreadLocal<MessageCodec> codec;
    private final Listener listener;
    private final Map<Long, InFlightSend> inFlight = new ConcurrentHashMap<>();
    private volatile MessageTamper tamper = MessageTamper.NONE;

    /**
     * @param ids the engine's id counter (never repeats, shared with read chains)
     * @param codec the engine's per-thread codec
     */
    public MetadataSender(AtomicLong ids, ThreadLocal<MessageCodec> codec, Listener listener) {
        this.ids = ids;
        this.codec = codec;
        this.listener = listener;
    }

    public void tamper(MessageTamper t) {
        tamper = t == null ? MessageTamper.NONE : t;
    }

    /** Sends {@code m} on {@code c}, now or when a slot of its tenant frees; {@code closeAfter}: retire {@code c} once sent. */
    public void send(DataConnection c, Message m, boolean closeAfter) {
        TenantDomain t = c.tenant();
        int slot = t.sendPool().acquire();
        if (slot < 0) {
            synchronized (t.queuedSends) {
                t.queuedSends.add(new QueuedSend(c, m, closeAfter));
            }
            drain(t); // a slot freed since we looked would otherwise wait for the next completion
            return;
        }
        post(c, m, slot, closeAfter);
    }

    private void post(DataConnection c, Message m, int slot, boolean closeAfter) {
        SendBufferPool pool = c.tenant().sendPool();
        MessageTamper t = tamper;
        Message out = t.message(c.role(), m);
        if (out == null) { // a test dropping the message
            pool.release(slot);
            return;
        }
        MemorySegment buf = pool.slot(slot).asSlice(0, Math.min(pool.slotBytes(), c.peerReceiveBufferSize()));
        int length;
        try {
            length = t.bytes(c.role(), buf, encode(out, buf));
        } catch (RuntimeException e) {
            pool.release(slot);
            throw e;
        }
        long seq = ids.incrementAndGet();
        inFlight.put(seq, new InFlightSend(slot, c, closeAfter));
        try {
            c.postSend(WorkRequestIds.of(WorkRequestIds.SEND, seq), buf.address(), length, pool.lkey());
        } catch (RuntimeException e) {
            if (inFlight.remove(seq) != null) {
                pool.release(slot);
            }
            throw e;
        }
    }

    /**
     * Encodes {@code m} into the peer's receive-buffer size; an answer whose map-output layouts do not
     * fit goes without them (the reducer then asks for the outputs' other blocks as before).
     */
    private int encode(Message m, MemorySegment buf) {
        try {
            return codec.get().encode(m, buf);
        } catch (IllegalArgumentException tooBig) {
            if (m instanceof Message.FetchResponse f && !f.layouts().isEmpty()) {
                return codec.get().encode(f.withoutLayouts(), buf);
            }
            throw tooBig;
        }
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
            }
            try {
                post(q.connection(), q.message(), slot, q.closeAfter());
            } catch (RuntimeException e) {
                listener.connectionFailed(q.connection(), e);
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
            t.queuedSends.removeIf(q -> q.connection() == c);
        }
        drain(t);
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
