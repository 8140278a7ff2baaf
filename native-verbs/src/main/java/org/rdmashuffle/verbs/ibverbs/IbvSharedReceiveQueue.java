package org.rdmashuffle.verbs.ibverbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

import org.rdmashuffle.verbs.ReceiveWorkRequests;
import org.rdmashuffle.verbs.SharedReceiveQueue;
import org.rdmashuffle.verbs.SharedReceiveQueueAttributes;
import org.rdmashuffle.verbs.VerbsException;
import org.rdmashuffle.verbs.ffi.Verbs;
import org.rdmashuffle.verbs.ffi.ibv_srq_attr;
import org.rdmashuffle.verbs.ffi.ibv_srq_init_attr;

/** {@code struct ibv_srq *}; receives are posted through {@code ibv_context.ops.post_srq_recv}. */
final class IbvSharedReceiveQueue implements SharedReceiveQueue {
    private final IbvContext context;
    final MemorySegment srq;
    private final MemorySegment postFn;
    private final AtomicBoolean closed = new AtomicBoolean();

    private IbvSharedReceiveQueue(IbvContext context, MemorySegment srq) {
        this.context = context;
        this.srq = srq;
        this.postFn = context.ops.postSrqRecv();
    }

    static IbvSharedReceiveQueue create(IbvProtectionDomain pd, int maxWr, int maxSge, int limit) {
        if (pd.context.ops.postSrqRecv() == null) {
            throw new VerbsException("ibv_create_srq", org.rdmashuffle.verbs.Errno.EOPNOTSUPP,
                    pd.context.device().name() + " has no shared receive queues");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment init = arena.allocate(ibv_srq_init_attr.layout());
            MemorySegment attr = ibv_srq_init_attr.attr(init);
            ibv_srq_attr.max_wr(attr, maxWr);
            ibv_srq_attr.max_sge(attr, maxSge);
            ibv_srq_attr.srq_limit(attr, limit);
            MemorySegment srq = Libibverbs.CREATE_SRQ.pointer(pd.pd, init);
            IbvSharedReceiveQueue result = new IbvSharedReceiveQueue(pd.context, srq);
            pd.context.objects.put(srq.address(), result);
            return result;
        }
    }

    @Override
    public void postReceive(ReceiveWorkRequests requests, int count) {
        WorkRequestPosts.post("ibv_post_srq_recv", postFn, srq, requests, count);
    }

    @Override
    public SharedReceiveQueueAttributes query() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(ibv_srq_attr.layout());
            Libibverbs.QUERY_SRQ.status(null, srq, attr);
            return new SharedReceiveQueueAttributes(ibv_srq_attr.max_wr(attr), ibv_srq_attr.max_sge(attr),
                    ibv_srq_attr.srq_limit(attr));
        }
    }

    @Override
    public void armLimit(int limit) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(ibv_srq_attr.layout());
            ibv_srq_attr.srq_limit(attr, limit);
            Libibverbs.MODIFY_SRQ.status("srq_limit " + limit, srq, attr, Verbs.IBV_SRQ_LIMIT());
        }
    }

    /** EBUSY while a queue pair still uses it: then it stays, and may be closed again once they are destroyed. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                Libibverbs.DESTROY_SRQ.status(null, srq);
            } catch (RuntimeException e) {
                closed.set(false);
                throw e;
            }
            context.objects.remove(srq.address());
        }
    }
}
