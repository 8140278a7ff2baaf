package org.rdmashuffle.verbs.ibverbs;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.rdmashuffle.verbs.ffi.ibv_context;
import org.rdmashuffle.verbs.ffi.ibv_context_ops;

/**
 * The function pointers behind verbs.h's {@code static inline} data-path verbs. verbs.h defines
 * {@code ibv_post_send(qp, wr, bad)} as {@code qp->context->ops.post_send(qp, wr, bad)}, and
 * likewise post_recv, post_srq_recv, poll_cq and req_notify_cq; there is no symbol to look up. We
 * (and ibv_alloc_mw, ibv_bind_mw, ibv_dealloc_mw: ops.alloc_mw, bind_mw, dealloc_mw) read the pointers once when a device is opened (the provider fills them in at open and never
 * changes them) and call them with the handles in {@link Libibverbs}.
 */
record ContextOps(MemorySegment postSend, MemorySegment postRecv, MemorySegment postSrqRecv,
                  MemorySegment pollCq, MemorySegment reqNotifyCq,
                  MemorySegment allocMw, MemorySegment bindMw, MemorySegment deallocMw) {

    static ContextOps read(MemorySegment context) {
        MemorySegment ctx = context.reinterpret(ibv_context.layout().byteSize());
        long ops = ibv_context.ops$offset();
        return new ContextOps(
                pointer(ctx, ops + ibv_context_ops.post_send$offset(), "post_send"),
                pointer(ctx, ops + ibv_context_ops.post_recv$offset(), "post_recv"),
                pointer(ctx, ops + ibv_context_ops.post_srq_recv$offset(), "post_srq_recv"),
                pointer(ctx, ops + ibv_context_ops.poll_cq$offset(), "poll_cq"),
                pointer(ctx, ops + ibv_context_ops.req_notify_cq$offset(), "req_notify_cq"),
                pointer(ctx, ops + ibv_context_ops.alloc_mw$offset(), "alloc_mw"),
                pointer(ctx, ops + ibv_context_ops.bind_mw$offset(), "bind_mw"),
                pointer(ctx, ops + ibv_context_ops.dealloc_mw$offset(), "dealloc_mw"));
    }

    private static MemorySegment pointer(MemorySegment ctx, long offset, String op) {
        MemorySegment fn = ctx.get(ValueLayout.ADDRESS, offset);
        if (fn.equals(MemorySegment.NULL)) {
            // A provider that lacks one (e.g. no SRQ support) leaves it NULL; calling it would crash.
            return null;
        }
        return fn;
    }
}
