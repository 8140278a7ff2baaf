package org.rdmashuffle.verbs.software;

import java.util.concurrent.atomic.AtomicBoolean;

import org.rdmashuffle.verbs.AsyncEvent;
import org.rdmashuffle.verbs.CompletionChannel;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.WorkCompletions;

/**
 * A completion queue as a ring of primitive arrays: providers push, {@link #poll} copies into the
 * caller's native {@code ibv_wc} array. A full queue overruns as hardware does: the completion is
 * lost and a CQ_ERR async event is raised.
 */
final class SoftCompletionQueue implements CompletionQueue {
    private final SoftContext context;
    private final SoftCompletionChannel channel;
    private final int capacity;
    private final long[] wrId;
    private final int[] status;
    private final int[] opcode;
    private final int[] byteLength;
    private final int[] immediate;
    private final int[] qpNumber;
    private final int[] flags;
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
        wrId = new long[capacity];
        status = new int[capacity];
        opcode = new int[capacity];
        byteLength = new int[capacity];
        immediate = new int[capacity];
        qpNumber = new int[capacity];
        flags = new int[capacity];
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
            int i = (head + size) % capacity;
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
            int i = (head + k) % capacity;
            completions.set(k, wrId[i], status[i], opcode[i], 0, byteLength[i], immediate[i], qpNumber[i], flags[i]);
        }
        head = (head + n) % capacity;
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
