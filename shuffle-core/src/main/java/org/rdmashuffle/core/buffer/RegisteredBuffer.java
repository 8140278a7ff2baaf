package org.rdmashuffle.core.buffer;

import java.lang.foreign.MemorySegment;

/**
 * A slice of registered memory a read lands in: {@link #segment()} for the bytes, {@link #lkey()}
 * for the scatter list. Released exactly once, back to the pool that gave it. It holds its slab's
 * memory and an offset rather than a slice of its own: a block read and streamed allocates no
 * segment object ({@link #segment()} makes one when asked). Once released, the pool may hand the
 * same object out again for the same memory: a holder must drop it when it releases it.
 */
public final class RegisteredBuffer {
    private final RegisteredBufferPool pool;
    private final MemorySegment slabMemory;
    private final long offset;
    private final long size;
    private final int lkey;
    /** Where it was cut: its slab, first unit and buddy order. */
    final RegisteredBufferPool.Slab slab;
    final int unit;
    final int order;
    private boolean released;

    RegisteredBuffer(RegisteredBufferPool pool, MemorySegment slabMemory, long offset, long size, int lkey,
                     RegisteredBufferPool.Slab slab, int unit, int order) {
        this.pool = pool;
        this.slabMemory = slabMemory;
        this.offset = offset;
        this.size = size;
        this.lkey = lkey;
        this.slab = slab;
        this.unit = unit;
        this.order = order;
    }

    /** Its bytes, as a new slice of the slab. */
    public MemorySegment segment() {
        return slabMemory.asSlice(offset, size);
    }

    /** Its first {@code length} bytes (what a read landed), as a new slice of the slab. */
    public MemorySegment segment(long length) {
        return slabMemory.asSlice(offset, length);
    }

    /** The whole slab it was cut from; its bytes start at {@link #offset()}. To read in place without a slice. */
    public MemorySegment slabMemory() {
        return slabMemory;
    }

    public long offset() {
        return offset;
    }

    public long size() {
        return size;
    }

    public long address() {
        return slabMemory.address() + offset;
    }

    public int lkey() {
        return lkey;
    }

    /** Under the pool's lock: hands this object out again (its unit and order came back free); false if still held. */
    boolean reuse() {
        synchronized (this) {
            if (!released) {
                return false;
            }
            released = false;
            return true;
        }
    }

    /** Hands the memory back; a second call is a bug and fails. */
    public void release() {
        synchronized (this) {
            if (released) {
                throw new IllegalStateException("registered buffer released twice");
            }
            released = true;
        }
        pool.release(this);
    }
}
