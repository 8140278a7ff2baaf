package org.rdmashuffle.verbs.software;

import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.rdmashuffle.verbs.AsyncEvent;
import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.PostException;
import org.rdmashuffle.verbs.ReceiveWorkRequests;
import org.rdmashuffle.verbs.SharedReceiveQueue;
import org.rdmashuffle.verbs.SharedReceiveQueueAttributes;
import org.rdmashuffle.verbs.VerbsException;

/**
 * A pool of posted receives shared by QPs; raises SRQ_LIMIT_REACHED once when it runs low. As the
 * kernel's ibv_destroy_srq, it refuses to go (EBUSY) while a queue pair not destroyed yet uses it.
 */
final class SoftSharedReceiveQueue implements SharedReceiveQueue {
    private final SoftProtectionDomain pd;
    private final int maxWr;
    private final int maxSge;
    private final LinkedBlockingDeque<Receive> posted = new LinkedBlockingDeque<>();
    private volatile int limit;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Queue pairs created on it and not destroyed yet. */
    private final AtomicInteger attached = new AtomicInteger();

    SoftSharedReceiveQueue(SoftProtectionDomain pd, int maxWr, int maxSge, int limit) {
        this.pd = pd;
        this.maxWr = maxWr;
        this.maxSge = maxSge;
        this.limit = limit;
    }

    @Override
    public void postReceive(ReceiveWorkRequests requests, int count) {
        if (count < 1 || count > requests.capacity()) {
            throw new IllegalArgumentException("cannot post " + count + " receives from a chain of " + requests.capacity());
        }
        for (int i = 0; i < count; i++) {
            if (posted.size() >= maxWr) {
                throw new PostException("ibv_post_srq_recv", Errno.ENOMEM, i, requests.wrIdAt(i), count);
            }
            posted.add(pd.context.receive(requests, i, maxSge, "ibv_post_srq_recv", count));
        }
    }

    /** Takes the oldest receive, waiting up to {@code waitNanos} for one; null if none came. */
    Receive take(long waitNanos) throws InterruptedException {
        Receive r = waitNanos <= 0 ? posted.poll() : posted.poll(waitNanos, TimeUnit.NANOSECONDS);
        if (r != null) {
            int armed = limit;
            if (armed > 0 && posted.size() < armed) {
                limit = 0;
                pd.context.raise(new AsyncEvent(AsyncEvent.Type.SRQ_LIMIT_REACHED, 0, this));
            }
        }
        return r;
    }

    @Override
    public SharedReceiveQueueAttributes query() {
        return new SharedReceiveQueueAttributes(maxWr, maxSge, limit);
    }

    @Override
    public void armLimit(int newLimit) {
        if (newLimit < 0 || newLimit > maxWr) {
            throw new VerbsException("ibv_modify_srq(srq_limit " + newLimit + ")", Errno.EINVAL,
                    "limit must be within 0.." + maxWr);
        }
        limit = newLimit;
    }

    /** A queue pair was created on it. */
    void attach() {
        attached.incrementAndGet();
    }

    /** A queue pair created on it was destroyed. */
    void detach() {
        attached.decrementAndGet();
    }

    @Override
    public void close() {
        int users = attached.get();
        if (users > 0 && !closed.get()) {
            throw new VerbsException("ibv_destroy_srq", Errno.EBUSY, users
                    + " queue pairs still use the shared receive queue: destroy them first");
        }
        if (closed.compareAndSet(false, true)) {
            posted.clear();
        }
    }
}
