package org.rdmashuffle.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.rdmashuffle.verbs.ffi.ibv_send_wr;
import org.rdmashuffle.verbs.ffi.ibv_sge;

/**
 * A reusable chain of send work requests in native memory, laid out exactly as libibverbs'
 * {@code struct ibv_send_wr} array with each request's {@code struct ibv_sge} slots beside it.
 * Built once and filled in place for every post, so posting allocates nothing on the Java heap:
 * the libibverbs provider hands the first request's address straight to {@code post_send}, and
 * other providers read the same structs.
 *
 * <p>Not thread-safe: one thread fills and posts a chain at a time. Owns its native memory;
 * {@link #close()} frees it.
 */
public final class SendWorkRequests implements WorkRequestChain, AutoCloseable {
    static final long WR_BYTES = ibv_send_wr.layout().byteSize();
    static final long SGE_BYTES = ibv_sge.layout().byteSize();
    private static final long NEXT = ibv_send_wr.next$offset();
    private static final long SG_LIST = ibv_send_wr.sg_list$offset();

    private final Arena arena;
    private final MemorySegment memory;
    private final SendWorkRequest[] requests;
    private final int maxSge;
    /** Where the first request's SGEs start: after every request. */
    private final long sgeBase;
    private final long badWrSlot;
    /** Made once: a slice per post would allocate. */
    private final MemorySegment badRequestSlot;

    private SendWorkRequests(int capacity, int maxSge) {
        if (capacity < 1 || maxSge < 1) {
            throw new IllegalArgumentException("a chain needs at least one request and one SGE per request");
        }
        this.maxSge = maxSge;
        this.arena = Arena.ofShared();
        this.sgeBase = capacity * WR_BYTES;
        this.badWrSlot = sgeBase + capacity * maxSge * SGE_BYTES;
        this.memory = arena.allocate(badWrSlot + ValueLayout.ADDRESS.byteSize(), 64);
        this.badRequestSlot = memory.asSlice(badWrSlot, ValueLayout.ADDRESS.byteSize());
        this.requests = new SendWorkRequest[capacity];
        long first = memory.address();
        for (int i = 0; i < capacity; i++) {
            long wr = i * WR_BYTES;
            long sges = sgeBase + (long) i * maxSge * SGE_BYTES;
            memory.set(ValueLayout.JAVA_LONG, wr + SG_LIST, first + sges);
            memory.set(ValueLayout.JAVA_LONG, wr + NEXT, i + 1 < capacity ? first + wr + WR_BYTES : 0L);
            requests[i] = new SendWorkRequest(memory, i, wr, sges, maxSge);
        }
    }

    /** Allocates a chain of {@code capacity} requests with room for {@code maxSge} SGEs each. */
    public static SendWorkRequests allocate(int capacity, int maxSge) {
        return new SendWorkRequests(capacity, maxSge);
    }

    public int capacity() {
        return requests.length;
    }

    public int maxSge() {
        return maxSge;
    }

    /** The request at {@code index}, a view into the native chain; views are made once and reused. */
    public SendWorkRequest get(int index) {
        return requests[index];
    }

    /**
     * Copies the first {@code count} requests of {@code from} into this chain's first {@code count}:
     * each request's fields and SGE slots, not the chain's own links (its {@code next} and
     * {@code sg_list} stay this chain's). For a chain outgrown while being filled: its requests go on
     * in a larger one. Both need room for {@code count} requests, this one for as many SGEs each.
     */
    public void copyFrom(SendWorkRequests from, int count) {
        if (count < 0 || count > from.capacity() || count > capacity() || from.maxSge > maxSge) {
            throw new IllegalArgumentException("cannot copy " + count + " requests of " + from.maxSge + " SGEs from a chain of "
                    + from.capacity() + " into one of " + capacity() + " with " + maxSge + " SGEs each");
        }
        for (int i = 0; i < count; i++) {
            long wr = i * WR_BYTES;
            long next = memory.get(ValueLayout.JAVA_LONG, wr + NEXT);
            long sgList = memory.get(ValueLayout.JAVA_LONG, wr + SG_LIST);
            MemorySegment.copy(from.memory, wr, memory, wr, WR_BYTES);
            memory.set(ValueLayout.JAVA_LONG, wr + NEXT, next);
            memory.set(ValueLayout.JAVA_LONG, wr + SG_LIST, sgList);
            MemorySegment.copy(from.memory, from.sgeBase + (long) i * from.maxSge * SGE_BYTES,
                    memory, sgeBase + (long) i * maxSge * SGE_BYTES, (long) from.maxSge * SGE_BYTES);
        }
    }

    /**
     * For providers: terminates the chain after {@code count} requests and returns the address of
     * the first. Must be paired with {@link #endPost(int)}.
     */
    @Override
    public long beginPost(int count) {
        checkCount(count);
        memory.set(ValueLayout.JAVA_LONG, (count - 1) * WR_BYTES + NEXT, 0L);
        return memory.address();
    }

    /** For providers: relinks the request after the last one posted. */
    @Override
    public void endPost(int count) {
        if (count < requests.length) {
            memory.set(ValueLayout.JAVA_LONG, (count - 1) * WR_BYTES + NEXT, memory.address() + count * WR_BYTES);
        }
    }

    /** For providers: where {@code post_send} writes {@code bad_wr}. */
    @Override
    public MemorySegment badRequestSlot() {
        return badRequestSlot;
    }

    /** For providers: the index of the request at native address {@code wrAddress}, or -1. */
    @Override
    public int indexOf(long wrAddress) {
        long offset = wrAddress - memory.address();
        if (offset < 0 || offset % WR_BYTES != 0 || offset / WR_BYTES >= requests.length) {
            return -1;
        }
        return (int) (offset / WR_BYTES);
    }

    /** The native memory of the chain (requests, SGEs, bad_wr slot), for providers that decode it. */
    @Override
    public MemorySegment memory() {
        return memory;
    }

    private void checkCount(int count) {
        if (count < 1 || count > requests.length) {
            throw new IllegalArgumentException("cannot post " + count + " requests from a chain of " + requests.length);
        }
    }

    @Override
    public long wrIdAt(int index) {
        return requests[index].wrId();
    }

    @Override
    public void close() {
        arena.close();
    }
}
