package org.rdmashuffle.verbs;

import java.lang.foreign.MemorySegment;

/**
 * What a provider needs from a native work-request chain ({@link SendWorkRequests},
 * {@link ReceiveWorkRequests}) to post it: terminate it after {@code count}, hand over its first
 * request and the {@code bad_wr} slot, relink it, and name a refused request. Not for applications.
 */
public interface WorkRequestChain {

    /** Terminates the chain after {@code count} requests and returns the first one's address. */
    long beginPost(int count);

    /** Relinks the request after the last one posted. */
    void endPost(int count);

    /** The chain's native memory; its first bytes are the first request. */
    MemorySegment memory();

    /** Where the provider writes {@code bad_wr}. */
    MemorySegment badRequestSlot();

    /** Index of the request at native address {@code wrAddress}, or -1. */
    int indexOf(long wrAddress);

    /** wr_id of request {@code index}. */
    long wrIdAt(int index);
}
