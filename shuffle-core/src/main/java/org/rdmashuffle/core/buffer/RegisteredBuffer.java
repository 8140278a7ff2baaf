package org.rdmashuffle.core.buffer;

import java.lang.foreign.MemorySegment;

/**
 * A slice of registered memory a read lands in: {@link #segment()} for the bytes, {@link #lkey()}
 * for the scatter list. Released exactly once, back to the pool that gave it.
 */
public final class RegisteredBuffer {
    private final RegisteredBufferPool pool;
    private final MemorySegment segment;
    private final int lkey;
    /** Where it was cut: its slab, first unit and buddy order. */
    final RegisteredBufferPool.Slab slab;
    final int unit;
    final int order;
    private boolean released;

    RegisteredBuffer(RegisteredBufferPool pool, MemorySegment segment, int lkey, RegisteredBufferPool.Slab slab, int unit,
                     int order) {
        this.pool = pool;
        this.segment = segment;
        this.lkey = lkey;
        this.slab = slab;
        this.unit = unit;
        this.order = order;
    }

    public MemorySegment segment() {
        return segment;
    }

    public long address() {
        return segment.address();
    }

    public int lkey() {
        return lkey;
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
