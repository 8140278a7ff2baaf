package org.rdmashuffle.verbs.ibverbs;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.rdmashuffle.verbs.PostException;
import org.rdmashuffle.verbs.VerbsException;
import org.rdmashuffle.verbs.WorkRequestChain;

/**
 * {@code post_send}, {@code post_recv} and {@code post_srq_recv} share one shape: terminate the
 * chain, call the function pointer read from {@code ibv_context.ops}, relink, and on refusal name
 * the request {@code bad_wr} points at. Allocates nothing unless the post is refused.
 */
final class WorkRequestPosts {
    private WorkRequestPosts() {
    }

    static void post(String call, MemorySegment fn, MemorySegment target, WorkRequestChain chain, int count) {
        chain.beginPost(count);
        int rc;
        try {
            rc = (int) Libibverbs.POST.invokeExact(fn, target, chain.memory(), chain.badRequestSlot());
        } catch (Throwable t) {
            throw new VerbsException(call, "downcall failed: " + t);
        } finally {
            chain.endPost(count);
        }
        if (rc != 0) {
            int bad = chain.indexOf(chain.badRequestSlot().get(ValueLayout.JAVA_LONG, 0));
            throw new PostException(call, Math.abs(rc), bad, bad < 0 ? -1 : chain.wrIdAt(bad), count);
        }
    }
}
