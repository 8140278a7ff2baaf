package org.rdmashuffle.verbs.software;

import java.util.concurrent.atomic.AtomicBoolean;

import org.rdmashuffle.verbs.AsyncEvent;
import org.rdmashuffle.verbs.CompletionChannel;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.WorkCompletions;

/**
 * A completion queue as a ring of primitive arrays: providers push, {@link #poll} copies into the
 * caller's native {@code ibv_wc} array. A full queue overruns as hardware does: the completion is
 * lost and a CQ_ERR async event is raised. The ring starts small and doubles as completions pile up,
 * up to the capacity asked for: an engine asks for 32,768 entries, which as arrays from the start
 * cost 1 MiB of heap per queue however few completions it ever holds (issue 52 item 8: 10,000 peer
 * engines in a few JVMs). Pushed by the link loops and posting threads, polled by the poller; every
 * access holds the queue's lock.
 */
final class SoftCompletionQueue implements CompletionQueue {
    private final SoftContext context;
    private final SoftCompletionChannel channel;
    /** The ring's first length (or the capacity, if smaller). */
    static final int INITIAL_SLOTS = 64;
    private final int capacity;
    private long[] wrId;
    private int[] status;
    private int[] opcode;
    private int[] byteLength;
    private int[] immediate;
    private int[] qpNumber;
    private int[] flags;
    private int head;
    private int size;
    private boolean armed;
    private boolean solicitedOnly;
    private boolean overrun;
    private int unacknowledged;
    private final AtomicBoolean closed = new AtomicBoolean();

    SoftCompletionQueue(SoftContext context, int minEntries, SoftCompletionChannel channel) {
        this.context = context;
        this.channel = channel;
        this.capacity = minEntries;
        int slots = Math.min(capacity, INITIAL_SLOTS);
        wrId = new long[slots];
        status = new int[slots];
        opcode = new int[slots];
        byteLength = new int[slots];
        immediate = new int[slots];
        qpNumber = new int[slots];
        flags = new int[slots];
    }

    /** The ring's length now (at most {@link #capacity}). */
    synchronized int slots() {
        return wrId.length;
    }

    /** Doubles the ring (up to the capacity), its entries moved to the start in order. Under the lock. */
    private void grow() {
        int length = wrId.length;
        int slots = (int) Math.min(capacity, 2L * length);
        wrId = unwrap(wrId, new long[slots], length);
        status = unwrap(status, new int[slots], length);
        opcode = unwrap(opcode, new int[slots], length);
        byteLength = unwrap(byteLength, new int[slots], length);
        immediate = unwrap(immediate, new int[slots], length);
        qpNumber = unwrap(qpNumber, new int[slots], length);
        flags = unwrap(flags, new int[slots], length);
        head = 0;
    }

    /** Copies the ring's {@code size} entries from {@code head} (of a ring {@code length} long) into the start of {@code to}. */
    private <A> A unwrap(A from, A to, int length) {
        int first = Math.min(size, length - head);
        System.arraycopy(from, head, to, 0, first);
        System.arraycopy(from, 0, to, first, size - first);
        return to;
    }

    /** Adds a completion; {@code solicited} marks a receive of a SOLICITED send (or an error). */
    void push(long id, int st, int op, int len, int imm, int qpn, int fl, boolean solicited) {
        boolean notify;
        synchronized (this) {
            if (closed.get()) {
                return;
            }
            if (size == capacity) {
                if (!overrun) {
                    overrun = true;
                    context.raise(new AsyncEvent(AsyncEvent.Type.CQ_ERR, 0, this));
                }
                return;
            }
            if (size == wrId.length) {
                grow();
            }
            int i = (head + size) % wrId.length;
            wrId[i] = id;
            status[i] = st;
            opcode[i] = op;
            byteLength[i] = len;
            immediate[i] = imm;
            qpNumber[i] = qpn;
            flags[i] = fl;
            size++;
            notify = armed && (!solicitedOnly || solicited || st != 0);
            if (notify) {
                armed = false;
            }
        }
        if (notify && channel != null) {
            channel.deliver(this);
        }
    }

    @Override
    public int capacity() {
        return capacity;
    }

    @Override
    public synchronized int poll(WorkCompletions completions) {
        int n = Math.min(size, completions.capacity());
        for (int k = 0; k < n; k++) {
            int i = (head + k) % wrId.length;
            completions.set(k, wrId[i], status[i], opcode[i], 0, byteLength[i], immediate[i], qpNumber[i], flags[i]);
        }
        head = (head + n) % wrId.length;
        size -= n;
        return n;
    }

    @Override
    public synchronized void requestNotify(boolean solicitedOnlyEvents) {
        // As with hardware, arming affects the next completion, not those already queued.
        armed = true;
        solicitedOnly = solicitedOnlyEvents;
    }

    synchronized void eventReceived() {
        unacknowledged++;
    }

    @Override
    public synchronized void acknowledgeEvents(int count) {
        unacknowledged = Math.max(0, unacknowledged - count);
    }

    @Override
    public CompletionChannel channel() {
        return channel;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true) && channel != null) {
            synchronized (channel) {
                channel.users--;
            }
        }
    }
}
