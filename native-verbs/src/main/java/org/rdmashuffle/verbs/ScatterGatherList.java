package org.rdmashuffle.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.rdmashuffle.verbs.ffi.ibv_data_buf;
import org.rdmashuffle.verbs.ffi.ibv_sge;

/**
 * A reusable native list of buffers for the extended post path: as {@code struct ibv_sge[]} for
 * {@link WorkRequestBuilder#sgeList} and, in a second array, as {@code struct ibv_data_buf[]} for
 * {@link WorkRequestBuilder#inlineDataList}. Filled in place; owns its memory.
 */
public final class ScatterGatherList implements AutoCloseable {
    private static final long SGE = ibv_sge.layout().byteSize();
    private static final long BUF = ibv_data_buf.layout().byteSize();

    private final Arena arena = Arena.ofShared();
    private final int capacity;
    private final MemorySegment sges;
    private final MemorySegment buffers;

    private ScatterGatherList(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be positive: " + capacity);
        }
        this.capacity = capacity;
        this.sges = arena.allocate(capacity * SGE, 8);
        this.buffers = arena.allocate(capacity * BUF, 8);
    }

    public static ScatterGatherList allocate(int capacity) {
        return new ScatterGatherList(capacity);
    }

    public int capacity() {
        return capacity;
    }

    /** Entry {@code i}: {@code length} bytes at {@code address}, registered under {@code lkey} (0 for inline data). */
    public ScatterGatherList set(int i, long address, int length, int lkey) {
        if (i < 0 || i >= capacity) {
            throw new IndexOutOfBoundsException("entry " + i + " of a list of " + capacity);
        }
        sges.set(ValueLayout.JAVA_LONG, i * SGE + ibv_sge.addr$offset(), address);
        sges.set(ValueLayout.JAVA_INT, i * SGE + ibv_sge.length$offset(), length);
        sges.set(ValueLayout.JAVA_INT, i * SGE + ibv_sge.lkey$offset(), lkey);
        buffers.set(ValueLayout.JAVA_LONG, i * BUF + ibv_data_buf.addr$offset(), address);
        buffers.set(ValueLayout.JAVA_LONG, i * BUF + ibv_data_buf.length$offset(), Integer.toUnsignedLong(length));
        return this;
    }

    /** Entry {@code i}: {@code length} bytes at {@code offset} of a registered region (bounds-checked). */
    public ScatterGatherList set(int i, MemoryRegion region, long offset, int length) {
        region.checkRange(offset, length);
        return set(i, region.address() + offset, length, region.lkey());
    }

    public long address(int i) {
        return sges.get(ValueLayout.JAVA_LONG, check(i) * SGE + ibv_sge.addr$offset());
    }

    public int length(int i) {
        return sges.get(ValueLayout.JAVA_INT, check(i) * SGE + ibv_sge.length$offset());
    }

    public int lkey(int i) {
        return sges.get(ValueLayout.JAVA_INT, check(i) * SGE + ibv_sge.lkey$offset());
    }

    /** For providers: the {@code struct ibv_sge[]}. */
    public MemorySegment sges() {
        return sges;
    }

    /** For providers: the {@code struct ibv_data_buf[]}. */
    public MemorySegment dataBuffers() {
        return buffers;
    }

    private int check(int i) {
        if (i < 0 || i >= capacity) {
            throw new IndexOutOfBoundsException("entry " + i + " of a list of " + capacity);
        }
        return i;
    }

    @Override
    public void close() {
        arena.close();
    }
}
