package org.rdmashuffle.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.rdmashuffle.verbs.ffi.ibv_recv_wr;
import org.rdmashuffle.verbs.ffi.ibv_sge;

/**
 * A reusable chain of receive work requests in native memory ({@code struct ibv_recv_wr} array
 * with SGE slots), for {@code ibv_post_recv} and {@code ibv_post_srq_recv}. Like
 * {@link SendWorkRequests}, filled in place and posted without heap allocation. Not thread-safe.
 */
public final class ReceiveWorkRequests implements WorkRequestChain, AutoCloseable {
    static final long WR_BYTES = ibv_recv_wr.layout().byteSize();
    private static final long SGE_BYTES = ibv_sge.layout().byteSize();
    private static final long WR_ID = ibv_recv_wr.wr_id$offset();
    private static final long NEXT = ibv_recv_wr.next$offset();
    private static final long SG_LIST = ibv_recv_wr.sg_list$offset();
    private static final long NUM_SGE = ibv_recv_wr.num_sge$offset();
    private static final long SGE_ADDR = ibv_sge.addr$offset();
    private static final long SGE_LENGTH = ibv_sge.length$offset();
    private static final long SGE_LKEY = ibv_sge.lkey$offset();

    private final Arena arena;
    private final MemorySegment memory;
    private final int capacity;
    private final int maxSge;
    private final long sgeBase;
    private final long badWrSlot;
    /** Made once: a slice per post would allocate. */
    private final MemorySegment badRequestSlot;

    private ReceiveWorkRequests(int capacity, int maxSge) {
        if (capacity < 1 || maxSge < 1) {
            throw new IllegalArgumentException("a chain needs at least one request and one SGE per request");
        }
        this.capacity = capacity;
        this.maxSge = maxSge;
        this.arena = Arena.ofShared();
        this.sgeBase = capacity * WR_BYTES;
        this.badWrSlot = sgeBase + (long) capacity * maxSge * SGE_BYTES;
        this.memory = arena.allocate(badWrSlot + ValueLayout.ADDRESS.byteSize(), 64);
        this.badRequestSlot = memory.asSlice(badWrSlot, ValueLayout.ADDRESS.byteSize());
        long first = memory.address();
        for (int i = 0; i < capacity; i++) {
            long wr = i * WR_BYTES;
            memory.set(ValueLayout.JAVA_LONG, wr + SG_LIST, first + sgeBase + (long) i * maxSge * SGE_BYTES);
            memory.set(ValueLayout.JAVA_LONG, wr + NEXT, i + 1 < capacity ? first + wr + WR_BYTES : 0L);
        }
    }

    public static ReceiveWorkRequests allocate(int capacity, int maxSge) {
        return new ReceiveWorkRequests(capacity, maxSge);
    }

    public int capacity() {
        return capacity;
    }

    public int maxSge() {
        return maxSge;
    }

    /** Sets request {@code index} to receive into one SGE of a registered region. */
    public ReceiveWorkRequests set(int index, long wrId, MemoryRegion region, long offset, int length) {
        region.checkRange(offset, length);
        return wrId(index, wrId).sge(index, 0, region.address() + offset, length, region.lkey()).sgeCount(index, 1);
    }

    public ReceiveWorkRequests wrId(int index, long wrId) {
        memory.set(ValueLayout.JAVA_LONG, wrOffset(index) + WR_ID, wrId);
        return this;
    }

    public ReceiveWorkRequests sge(int index, int slot, long address, int length, int lkey) {
        long sge = sgeOffset(index, slot);
        memory.set(ValueLayout.JAVA_LONG, sge + SGE_ADDR, address);
        memory.set(ValueLayout.JAVA_INT, sge + SGE_LENGTH, length);
        memory.set(ValueLayout.JAVA_INT, sge + SGE_LKEY, lkey);
        return this;
    }

    public ReceiveWorkRequests sgeCount(int index, int count) {
        if (count < 0 || count > maxSge) {
            throw new IllegalArgumentException("SGE count " + count + " outside a request with " + maxSge + " slots");
        }
        memory.set(ValueLayout.JAVA_INT, wrOffset(index) + NUM_SGE, count);
        return this;
    }

    public long wrId(int index) {
        return memory.get(ValueLayout.JAVA_LONG, wrOffset(index) + WR_ID);
    }

    public int sgeCount(int index) {
        return memory.get(ValueLayout.JAVA_INT, wrOffset(index) + NUM_SGE);
    }

    public long sgeAddress(int index, int slot) {
        return memory.get(ValueLayout.JAVA_LONG, sgeOffset(index, slot) + SGE_ADDR);
    }

    public int sgeLength(int index, int slot) {
        return memory.get(ValueLayout.JAVA_INT, sgeOffset(index, slot) + SGE_LENGTH);
    }

    public int sgeLkey(int index, int slot) {
        return memory.get(ValueLayout.JAVA_INT, sgeOffset(index, slot) + SGE_LKEY);
    }

    /** For providers: terminates the chain after {@code count} and returns the first request's address. */
    @Override
    public long beginPost(int count) {
        if (count < 1 || count > capacity) {
            throw new IllegalArgumentException("cannot post " + count + " receives from a chain of " + capacity);
        }
        memory.set(ValueLayout.JAVA_LONG, (count - 1) * WR_BYTES + NEXT, 0L);
        return memory.address();
    }

    /** For providers: relinks the request after the last one posted. */
    @Override
    public void endPost(int count) {
        if (count < capacity) {
            memory.set(ValueLayout.JAVA_LONG, (count - 1) * WR_BYTES + NEXT, memory.address() + count * WR_BYTES);
        }
    }

    /** For providers: where {@code post_recv} writes {@code bad_wr}. */
    @Override
    public MemorySegment badRequestSlot() {
        return badRequestSlot;
    }

    /** For providers: index of the request at {@code wrAddress}, or -1. */
    @Override
    public int indexOf(long wrAddress) {
        long offset = wrAddress - memory.address();
        if (offset < 0 || offset % WR_BYTES != 0 || offset / WR_BYTES >= capacity) {
            return -1;
        }
        return (int) (offset / WR_BYTES);
    }

    @Override
    public MemorySegment memory() {
        return memory;
    }

    private long wrOffset(int index) {
        if (index < 0 || index >= capacity) {
            throw new IndexOutOfBoundsException("receive request " + index + " of a chain of " + capacity);
        }
        return index * WR_BYTES;
    }

    private long sgeOffset(int index, int slot) {
        wrOffset(index);
        if (slot < 0 || slot >= maxSge) {
            throw new IndexOutOfBoundsException("SGE slot " + slot + " of a request with " + maxSge + " slots");
        }
        return sgeBase + ((long) index * maxSge + slot) * SGE_BYTES;
    }

    @Override
    public long wrIdAt(int index) {
        return wrId(index);
    }

    @Override
    public void close() {
        arena.close();
    }
}
