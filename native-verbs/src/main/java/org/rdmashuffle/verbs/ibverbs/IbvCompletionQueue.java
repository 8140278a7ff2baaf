package org.rdmashuffle.verbs.ibverbs;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.rdmashuffle.verbs.CompletionChannel;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.VerbsException;
import org.rdmashuffle.verbs.WorkCompletions;
import org.rdmashuffle.verbs.ffi.ibv_cq;

/** {@code struct ibv_cq *}; polls and arms through {@code ibv_context.ops}. */
final class IbvCompletionQueue implements CompletionQueue {
    private final IbvContext context;
    final MemorySegment cq;
    private final IbvCompletionChannel channel;
    private final int capacity;
    private final MemorySegment pollFn;
    private final MemorySegment notifyFn;
    /** Events taken from the channel and not yet acknowledged: ibv_destroy_cq waits for them. */
    private final AtomicInteger unacknowledged = new AtomicInteger();
    private final AtomicBoolean closed = new AtomicBoolean();

    IbvCompletionQueue(IbvContext context, MemorySegment cq, IbvCompletionChannel channel) {
        this.context = context;
        this.cq = cq.reinterpret(ibv_cq.layout().byteSize());
        this.channel = channel;
        this.capacity = ibv_cq.cqe(this.cq);
        this.pollFn = context.ops.pollCq();
        this.notifyFn = context.ops.reqNotifyCq();
    }

    @Override
    public int capacity() {
        return capacity;
    }

    @Override
    public int poll(WorkCompletions completions) {
        int n;
        try {
            n = (int) Libibverbs.POLL_CQ.invokeExact(pollFn, cq, completions.capacity(), completions.memory());
        } catch (Throwable t) {
            throw new VerbsException("ibv_poll_cq", "downcall failed: " + t);
        }
        if (n < 0) {
            throw new VerbsException("ibv_poll_cq", -n, "CQ of " + capacity + " entries");
        }
        return n;
    }

    @Override
    public void requestNotify(boolean solicitedOnly) {
        int rc;
        try {
            rc = (int) Libibverbs.REQ_NOTIFY_CQ.invokeExact(notifyFn, cq, solicitedOnly ? 1 : 0);
        } catch (Throwable t) {
            throw new VerbsException("ibv_req_notify_cq", "downcall failed: " + t);
        }
        if (rc != 0) {
            throw new VerbsException("ibv_req_notify_cq", Math.abs(rc), null);
        }
    }

    void eventReceived() {
        unacknowledged.incrementAndGet();
    }

    @Override
    public void acknowledgeEvents(int count) {
        if (count <= 0) {
            return;
        }
        unacknowledged.addAndGet(-count);
        Libibverbs.ACK_CQ_EVENTS.plain(cq, count);
    }

    @Override
    public CompletionChannel channel() {
        return channel;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            int pending = unacknowledged.getAndSet(0);
            if (pending > 0) {
                Libibverbs.ACK_CQ_EVENTS.plain(cq, pending); // else ibv_destroy_cq blocks forever
            }
            context.objects.remove(cq.address());
            Libibverbs.DESTROY_CQ.status(null, cq);
            if (channel != null) {
                channel.unregister(this);
            }
        }
    }
}
