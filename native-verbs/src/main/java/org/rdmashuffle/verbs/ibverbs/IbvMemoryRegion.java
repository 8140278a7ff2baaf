package org.rdmashuffle.verbs.ibverbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.ffi.ibv_mr;

/** {@code struct ibv_mr *}, and the memory behind it when the region owns it. */
final class IbvMemoryRegion implements MemoryRegion {
    final IbvProtectionDomain pd;
    private final MemorySegment mr;
    private final MemorySegment memory;
    private final int lkey;
    private final int rkey;
    private final int access;
    private final Arena owned;
    private final AtomicBoolean closed = new AtomicBoolean();

    IbvMemoryRegion(IbvProtectionDomain pd, MemorySegment mr, MemorySegment memory, int access, Arena owned) {
        this.pd = pd;
        this.mr = mr.reinterpret(ibv_mr.layout().byteSize());
        this.memory = memory;
        this.lkey = ibv_mr.lkey(this.mr);
        this.rkey = ibv_mr.rkey(this.mr);
        this.access = access;
        this.owned = owned;
    }

    /** Whether it was deregistered (nothing native may name it after). */
    boolean isClosed() {
        return closed.get();
    }

    @Override
    public MemorySegment segment() {
        return memory;
    }

    @Override
    public int lkey() {
        return lkey;
    }

    @Override
    public int rkey() {
        return rkey;
    }

    @Override
    public int access() {
        return access;
    }

    /** The {@code struct ibv_mr *}. */
    @Override
    public long handle() {
        return mr.address();
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                Libibverbs.DEREG_MR.status(null, mr);
            } catch (RuntimeException refused) { // EINVAL with a window bound to it (rxe): still registered, to close again
                closed.set(false);
                throw refused;
            }
            // Only after the device let go of the pages: if deregistration failed, the memory stays.
            if (owned != null) {
                owned.close();
            }
        }
    }

    @Override
    public String toString() {
        return "MemoryRegion[" + memory.byteSize() + " bytes, lkey " + lkey + ", rkey " + rkey + "]";
    }
}
