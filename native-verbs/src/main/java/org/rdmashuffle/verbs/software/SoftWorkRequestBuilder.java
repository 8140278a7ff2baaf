package org.rdmashuffle.verbs.software;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.ReentrantLock;

import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.MemoryWindow;
import org.rdmashuffle.verbs.ScatterGatherList;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendOps;
import org.rdmashuffle.verbs.SendWorkRequest;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.VerbsException;
import org.rdmashuffle.verbs.WorkRequestBuilder;
import org.rdmashuffle.verbs.WorkRequestOpcode;

/**
 * The extended post path on the software provider, with libibverbs' semantics: start takes the
 * QP's lock, the builder calls fill a private chain (inline data is copied at once), complete
 * posts all of it or — if any request is invalid — none of it and reports the errno, abort drops it.
 *
 * <p>The chain (and its inline staging) starts at {@link #INITIAL_CHAIN} requests and doubles when a
 * chain being built needs more, up to the QP's {@code max_send_wr}, beyond which, as before, the
 * chain is refused with ENOMEM at complete: a served peer's QP, which posts a send or two at a time,
 * keeps a few hundred bytes instead of {@code max_send_wr} requests' worth (about 25 KiB at 128). It
 * never shrinks. Threads: whichever holds the region (start to complete or abort).
 */
final class SoftWorkRequestBuilder implements WorkRequestBuilder {
    /** Requests the chain holds before its first growth. */
    static final int INITIAL_CHAIN = 8;

    private final SoftQueuePair qp;
    private final int sendOps;
    private final int maxSge;
    private final int maxInline;
    /** The QP's max_send_wr: the most the chain grows to. */
    private final int maxChain;
    private final ReentrantLock region = new ReentrantLock();
    private SendWorkRequests chain;
    /** Owns {@link #inlineStaging}: replaced with it when the chain grows. */
    private Arena stagingArena;
    /** One slot of {@code max(1, maxInline)} bytes per request of the chain. */
    private MemorySegment inlineStaging;
    /** Set by {@link #close} (under the region): the chain is gone. */
    private boolean closed;
    private long wrId;
    private int flags;
    private int count;
    private int errno;
    private SendWorkRequest current;

    SoftWorkRequestBuilder(SoftQueuePair qp, int sendOps, int capacity, int maxSge, int maxInline) {
        this.qp = qp;
        this.sendOps = sendOps;
        this.maxSge = maxSge;
        this.maxInline = maxInline;
        this.maxChain = Math.max(1, capacity);
        int initial = Math.min(INITIAL_CHAIN, maxChain);
        // One slot more than granted, so an over-long SGE list is recorded and refused at complete.
        this.chain = SendWorkRequests.allocate(initial, maxSge + 1);
        this.stagingArena = Arena.ofShared();
        this.inlineStaging = stagingArena.allocate(stagingBytes(initial), 8);
    }

    private long stagingBytes(int requests) {
        return (long) requests * Math.max(1, maxInline);
    }

    /**
     * Doubles the chain and its inline staging, at most to the QP's max_send_wr, carrying the requests
     * filled so far over (inline ones pointed at their staged bytes' new place); false if it is that
     * long already or the memory cannot be had (the chain is then refused, ENOMEM, as a full one is).
     */
    private boolean grow() {
        int capacity = chain.capacity();
        if (capacity >= maxChain || closed) {
            return false;
        }
        int larger = (int) Math.min(2L * capacity, maxChain);
        SendWorkRequests grown = null;
        Arena arena = null;
        MemorySegment staging;
        try {
            grown = SendWorkRequests.allocate(larger, maxSge + 1);
            arena = Arena.ofShared();
            staging = arena.allocate(stagingBytes(larger), 8);
        } catch (OutOfMemoryError e) {
            if (grown != null) {
                grown.close();
            }
            if (arena != null) {
                arena.close();
            }
            return false;
        }
        grown.copyFrom(chain, count);
        MemorySegment.copy(inlineStaging, 0, staging, 0, inlineStaging.byteSize());
        long oldBase = inlineStaging.address();
        for (int i = 0; i < count; i++) {
            SendWorkRequest r = grown.get(i);
            long offset = r.sgeCount() == 0 ? -1 : r.sgeAddress(0) - oldBase;
            if ((r.flags() & SendFlags.INLINE) != 0 && offset >= 0 && offset < inlineStaging.byteSize()) {
                r.sge(0, staging.address() + offset, r.sgeLength(0), r.sgeLkey(0));
            }
        }
        chain.close();
        stagingArena.close();
        chain = grown;
        stagingArena = arena;
        inlineStaging = staging;
        return true;
    }

    /** Requests the chain holds now (tests: it starts small and grows). */
    int chainCapacity() {
        return chain.capacity();
    }

    /** Native bytes the chain and its inline staging hold now (tests). */
    long nativeBytes() {
        return chain.memory().byteSize() + inlineStaging.byteSize();
    }

    @Override
    public void start() {
        region.lock();
        count = 0;
        errno = 0;
        current = null;
    }

    @Override
    public WorkRequestBuilder wrId(long id) {
        wrId = id;
        return this;
    }

    @Override
    public WorkRequestBuilder flags(int sendFlags) {
        flags = sendFlags;
        return this;
    }

    private SendWorkRequest next(WorkRequestOpcode op, int requiredOp) {
        if (!region.isHeldByCurrentThread()) {
            throw new IllegalStateException("ibv_wr_* call outside ibv_wr_start ... ibv_wr_complete");
        }
        if ((sendOps & requiredOp) == 0) {
            fail(Errno.EOPNOTSUPP);
        }
        if (count == chain.capacity() && !grow()) {
            fail(Errno.ENOMEM);
            current = null;
            return null;
        }
        current = chain.get(count++).reset().wrId(wrId).flags(flags).opcode(op);
        return current;
    }

    private void fail(int e) {
        if (errno == 0) {
            errno = e;
        }
    }

    @Override
    public WorkRequestBuilder rdmaRead(int rkey, long remoteAddress) {
        SendWorkRequest r = next(WorkRequestOpcode.RDMA_READ, SendOps.RDMA_READ);
        if (r != null) {
            r.remote(remoteAddress, rkey);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder rdmaWrite(int rkey, long remoteAddress) {
        SendWorkRequest r = next(WorkRequestOpcode.RDMA_WRITE, SendOps.RDMA_WRITE);
        if (r != null) {
            r.remote(remoteAddress, rkey);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder rdmaWriteWithImmediate(int rkey, long remoteAddress, int immediate) {
        SendWorkRequest r = next(WorkRequestOpcode.RDMA_WRITE_WITH_IMM, SendOps.RDMA_WRITE_WITH_IMM);
        if (r != null) {
            r.remote(remoteAddress, rkey).immediate(immediate);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder send() {
        next(WorkRequestOpcode.SEND, SendOps.SEND);
        return this;
    }

    @Override
    public WorkRequestBuilder sendWithImmediate(int immediate) {
        SendWorkRequest r = next(WorkRequestOpcode.SEND_WITH_IMM, SendOps.SEND_WITH_IMM);
        if (r != null) {
            r.immediate(immediate);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder compareAndSwap(int rkey, long remoteAddress, long compare, long swap) {
        SendWorkRequest r = next(WorkRequestOpcode.ATOMIC_CMP_AND_SWP, SendOps.ATOMIC_CMP_AND_SWP);
        if (r != null) {
            r.compareAndSwap(remoteAddress, rkey, compare, swap);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder fetchAndAdd(int rkey, long remoteAddress, long add) {
        SendWorkRequest r = next(WorkRequestOpcode.ATOMIC_FETCH_AND_ADD, SendOps.ATOMIC_FETCH_AND_ADD);
        if (r != null) {
            r.fetchAndAdd(remoteAddress, rkey, add);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder bindWindow(MemoryWindow window, int newRkey, MemoryRegion region, long address, long length,
                                         int windowAccess) {
        SendWorkRequest r = next(WorkRequestOpcode.BIND_MW, SendOps.BIND_MW);
        if (r != null) {
            r.bindWindow(window, newRkey, region, address, length, windowAccess);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder localInvalidate(int rkey) {
        SendWorkRequest r = next(WorkRequestOpcode.LOCAL_INV, SendOps.LOCAL_INV);
        if (r != null) {
            r.localInvalidate(rkey);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder sendWithInvalidate(int rkey) {
        SendWorkRequest r = next(WorkRequestOpcode.SEND_WITH_INV, SendOps.SEND_WITH_INV);
        if (r != null) {
            r.sendWithInvalidate(rkey);
        }
        return this;
    }

    /** The software provider refuses QPs with {@link SendOps#FLUSH}, so no builder of it has the operation. */
    @Override
    public WorkRequestBuilder flush(int rkey, long remoteAddress, long length, int placement, int level) {
        throw new IllegalStateException("ibv_wr_flush: QP " + qp.qpNumber() + " was created without SendOps.FLUSH"
                + " (a QP gets it only from a library and device with FLUSH)");
    }

    /** Nor with {@link SendOps#ATOMIC_WRITE}: its device has no atomic write. */
    @Override
    public WorkRequestBuilder atomicWrite(int rkey, long remoteAddress, long value) {
        throw new IllegalStateException("ibv_wr_atomic_write: QP " + qp.qpNumber() + " was created without SendOps.ATOMIC_WRITE"
                + " (a QP gets it only on a device with atomic write)");
    }

    @Override
    public WorkRequestBuilder sge(int lkey, long address, int length) {
        if (current != null) {
            current.sge(0, address, length, lkey).sgeCount(1);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder sgeList(ScatterGatherList list, int n) {
        if (current == null) {
            return this;
        }
        if (n > maxSge) {
            fail(Errno.EINVAL);
            return this;
        }
        for (int i = 0; i < n; i++) {
            current.sge(i, list.address(i), list.length(i), list.lkey(i));
        }
        current.sgeCount(n);
        return this;
    }

    @Override
    public WorkRequestBuilder inlineData(long address, int length) {
        if (current == null) {
            return this;
        }
        if (length > maxInline) {
            fail(Errno.EINVAL);
            return this;
        }
        MemorySegment slot = stage(MemorySegment.ofAddress(address).reinterpret(length), 0);
        current.flags(current.flags() | SendFlags.INLINE).sge(0, slot.address(), length, 0).sgeCount(1);
        return this;
    }

    @Override
    public WorkRequestBuilder inlineDataList(ScatterGatherList list, int n) {
        if (current == null) {
            return this;
        }
        long total = 0;
        for (int i = 0; i < n; i++) {
            total += Integer.toUnsignedLong(list.length(i));
        }
        if (total > maxInline) {
            fail(Errno.EINVAL);
            return this;
        }
        long offset = 0;
        for (int i = 0; i < n; i++) {
            int length = list.length(i);
            stage(MemorySegment.ofAddress(list.address(i)).reinterpret(length), offset);
            offset += length;
        }
        MemorySegment staged = inlineStaging.asSlice((long) (count - 1) * Math.max(1, maxInline), Math.max(1, total));
        current.flags(current.flags() | SendFlags.INLINE).sge(0, staged.address(), (int) total, 0).sgeCount(1);
        return this;
    }

    /** Inline data is copied now, as libibverbs copies it into the WQE when the setter is called. */
    private MemorySegment stage(MemorySegment source, long offset) {
        MemorySegment slot = inlineStaging.asSlice((long) (count - 1) * Math.max(1, maxInline) + offset, source.byteSize());
        slot.copyFrom(source);
        return slot;
    }

    @Override
    public void complete() {
        requireRegion("ibv_wr_complete");
        try {
            int e = errno != 0 ? errno : (count == 0 ? 0 : qp.postAllOrNothing(chain, count));
            if (e != 0) {
                throw new VerbsException("ibv_wr_complete", e, "QP " + qp.qpNumber() + ": nothing since ibv_wr_start was posted");
            }
        } finally {
            count = 0;
            region.unlock();
        }
    }

    @Override
    public void abort() {
        requireRegion("ibv_wr_abort");
        count = 0;
        region.unlock();
    }

    private void requireRegion(String call) {
        if (!region.isHeldByCurrentThread()) {
            throw new IllegalStateException(call + " without ibv_wr_start on this thread");
        }
    }

    /** Frees the chain; under the region, so a chain being built never grows into memory nobody frees. */
    void close() {
        region.lock();
        try {
            closed = true;
            chain.close();
            stagingArena.close();
        } finally {
            region.unlock();
        }
    }
}
