package org.rdmashuffle.verbs;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import org.rdmashuffle.verbs.ffi.ibv_mw_bind_info;
import org.rdmashuffle.verbs.ffi.ibv_send_wr;
import org.rdmashuffle.verbs.ffi.ibv_sge;

/**
 * One {@code struct ibv_send_wr} of a {@link SendWorkRequests} chain. Setters write straight into
 * native memory and return this view, so a request is filled without allocation:
 * <pre>{@code
 * chain.get(i).reset().wrId(id).opcode(RDMA_READ).remote(addr, rkey).sge(0, mr, off, len).sgeCount(1);
 * }</pre>
 * Immediate data is given and returned in host order; it travels in network order.
 */
public final class SendWorkRequest {
    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT.withOrder(ByteOrder.BIG_ENDIAN);
    private static final long WR_ID = ibv_send_wr.wr_id$offset();
    private static final long NUM_SGE = ibv_send_wr.num_sge$offset();
    private static final long OPCODE = ibv_send_wr.opcode$offset();
    private static final long SEND_FLAGS = ibv_send_wr.send_flags$offset();
    private static final long IMM = ibv_send_wr.imm_data$offset();
    private static final long RDMA = ibv_send_wr.wr$offset() + ibv_send_wr.wr.rdma$offset();
    private static final long RDMA_ADDR = RDMA + ibv_send_wr.wr.rdma.remote_addr$offset();
    private static final long RDMA_RKEY = RDMA + ibv_send_wr.wr.rdma.rkey$offset();
    private static final long ATOMIC = ibv_send_wr.wr$offset() + ibv_send_wr.wr.atomic$offset();
    private static final long ATOMIC_ADDR = ATOMIC + ibv_send_wr.wr.atomic.remote_addr$offset();
    private static final long ATOMIC_COMPARE_ADD = ATOMIC + ibv_send_wr.wr.atomic.compare_add$offset();
    private static final long ATOMIC_SWAP = ATOMIC + ibv_send_wr.wr.atomic.swap$offset();
    private static final long ATOMIC_RKEY = ATOMIC + ibv_send_wr.wr.atomic.rkey$offset();
    private static final long INVALIDATE_RKEY = ibv_send_wr.invalidate_rkey$offset();
    private static final long BIND = ibv_send_wr.bind_mw$offset();
    private static final long BIND_MW = BIND + ibv_send_wr.bind_mw.mw$offset();
    private static final long BIND_RKEY = BIND + ibv_send_wr.bind_mw.rkey$offset();
    private static final long BIND_INFO = BIND + ibv_send_wr.bind_mw.bind_info$offset();
    private static final long BIND_MR = BIND_INFO + ibv_mw_bind_info.mr$offset();
    private static final long BIND_ADDR = BIND_INFO + ibv_mw_bind_info.addr$offset();
    private static final long BIND_LENGTH = BIND_INFO + ibv_mw_bind_info.length$offset();
    private static final long BIND_ACCESS = BIND_INFO + ibv_mw_bind_info.mw_access_flags$offset();
    /** Everything after sg_list (num_sge onwards) is per-post state that reset() clears. */
    private static final long CLEAR_FROM = NUM_SGE;

    static {
        if (CLEAR_FROM % Long.BYTES != 0 || SendWorkRequests.WR_BYTES % Long.BYTES != 0) {
            throw new AssertionError("struct ibv_send_wr layout changed: num_sge at " + CLEAR_FROM);
        }
    }
    private static final long SGE_ADDR = ibv_sge.addr$offset();
    private static final long SGE_LENGTH = ibv_sge.length$offset();
    private static final long SGE_LKEY = ibv_sge.lkey$offset();

    private final MemorySegment memory;
    private final int index;
    private final long wr;
    private final long sges;
    private final int maxSge;

    SendWorkRequest(MemorySegment memory, int index, long wr, long sges, int maxSge) {
        this.memory = memory;
        this.index = index;
        this.wr = wr;
        this.sges = sges;
        this.maxSge = maxSge;
    }

    /** Position in the chain. */
    public int index() {
        return index;
    }

    /** Clears opcode, flags, SGE count, immediate and remote fields; keeps the chain links. */
    public SendWorkRequest reset() {
        // A loop of long stores rather than asSlice().fill(): no slice object on the hot path.
        for (long off = CLEAR_FROM; off < SendWorkRequests.WR_BYTES; off += Long.BYTES) {
            memory.set(ValueLayout.JAVA_LONG, wr + off, 0L);
        }
        return this;
    }

    public SendWorkRequest wrId(long wrId) {
        memory.set(ValueLayout.JAVA_LONG, wr + WR_ID, wrId);
        return this;
    }

    public SendWorkRequest opcode(WorkRequestOpcode opcode) {
        if (opcode == WorkRequestOpcode.FLUSH) {
            throw new IllegalArgumentException("work request " + index + ": IBV_WR_FLUSH is posted with ibv_wr_flush "
                    + "(WorkRequestBuilder.flush); struct ibv_send_wr has no fields for a flush's placement and level");
        }
        if (opcode == WorkRequestOpcode.ATOMIC_WRITE) {
            throw new IllegalArgumentException("work request " + index + ": IBV_WR_ATOMIC_WRITE is posted with "
                    + "ibv_wr_atomic_write (WorkRequestBuilder.atomicWrite); struct ibv_send_wr has no field for its 8 bytes");
        }
        memory.set(ValueLayout.JAVA_INT, wr + OPCODE, opcode.code());
        return this;
    }

    /** {@link SendFlags} bits. */
    public SendWorkRequest flags(int sendFlags) {
        if ((sendFlags & SendFlags.IP_CSUM) != 0) {
            throw new IllegalArgumentException("work request " + index + ": IBV_SEND_IP_CSUM is for UD and raw-packet queue "
                    + "pairs; the queue pairs this API makes are RC, whose packets carry no IP header of the payload's to sum");
        }
        memory.set(ValueLayout.JAVA_INT, wr + SEND_FLAGS, sendFlags);
        return this;
    }

    /** Immediate data for RDMA_WRITE_WITH_IMM and SEND_WITH_IMM, in host order. */
    public SendWorkRequest immediate(int value) {
        memory.set(BE_INT, wr + IMM, value);
        return this;
    }

    /** Remote address and rkey for RDMA_READ and RDMA_WRITE(_WITH_IMM). */
    public SendWorkRequest remote(long remoteAddress, int rkey) {
        memory.set(ValueLayout.JAVA_LONG, wr + RDMA_ADDR, remoteAddress);
        memory.set(ValueLayout.JAVA_INT, wr + RDMA_RKEY, rkey);
        return this;
    }

    /** ATOMIC_CMP_AND_SWP on the 8 bytes at {@code remoteAddress}; the old value lands in SGE 0. */
    public SendWorkRequest compareAndSwap(long remoteAddress, int rkey, long compare, long swap) {
        opcode(WorkRequestOpcode.ATOMIC_CMP_AND_SWP);
        atomic(remoteAddress, rkey, compare);
        memory.set(ValueLayout.JAVA_LONG, wr + ATOMIC_SWAP, swap);
        return this;
    }

    /** ATOMIC_FETCH_AND_ADD on the 8 bytes at {@code remoteAddress}; the old value lands in SGE 0. */
    public SendWorkRequest fetchAndAdd(long remoteAddress, int rkey, long add) {
        opcode(WorkRequestOpcode.ATOMIC_FETCH_AND_ADD);
        atomic(remoteAddress, rkey, add);
        return this;
    }

    private void atomic(long remoteAddress, int rkey, long compareAdd) {
        memory.set(ValueLayout.JAVA_LONG, wr + ATOMIC_ADDR, remoteAddress);
        memory.set(ValueLayout.JAVA_INT, wr + ATOMIC_RKEY, rkey);
        memory.set(ValueLayout.JAVA_LONG, wr + ATOMIC_COMPARE_ADD, compareAdd);
    }

    /**
     * BIND_MW: binds type 2 {@code window} to {@code [address, address + length)} of {@code region} with
     * {@code windowAccess}, under the new key {@code newRkey} (normally {@link MemoryWindow#nextRkey}
     * of its current one), for the QP this request is posted on. Carries no SGE.
     */
    public SendWorkRequest bindWindow(MemoryWindow window, int newRkey, MemoryRegion region, long address, long length,
                                      int windowAccess) {
        opcode(WorkRequestOpcode.BIND_MW);
        memory.set(ValueLayout.JAVA_LONG, wr + BIND_MW, window.handle());
        memory.set(ValueLayout.JAVA_INT, wr + BIND_RKEY, newRkey);
        memory.set(ValueLayout.JAVA_LONG, wr + BIND_MR, region == null ? 0L : region.handle());
        memory.set(ValueLayout.JAVA_LONG, wr + BIND_ADDR, address);
        memory.set(ValueLayout.JAVA_LONG, wr + BIND_LENGTH, length);
        memory.set(ValueLayout.JAVA_INT, wr + BIND_ACCESS, windowAccess);
        return this;
    }

    /** LOCAL_INV: takes back the type 2 window whose key is {@code rkey}. Carries no SGE. */
    public SendWorkRequest localInvalidate(int rkey) {
        opcode(WorkRequestOpcode.LOCAL_INV);
        memory.set(ValueLayout.JAVA_INT, wr + INVALIDATE_RKEY, rkey);
        return this;
    }

    /** SEND_WITH_INV: a SEND (its SGEs set as for SEND) that takes back the receiver's window {@code rkey}. */
    public SendWorkRequest sendWithInvalidate(int rkey) {
        opcode(WorkRequestOpcode.SEND_WITH_INV);
        memory.set(ValueLayout.JAVA_INT, wr + INVALIDATE_RKEY, rkey);
        return this;
    }

    /** Sets SGE {@code slot} to raw address, length and lkey (no bounds check; see the MR overload). */
    public SendWorkRequest sge(int slot, long address, int length, int lkey) {
        long sge = sgeOffset(slot);
        memory.set(ValueLayout.JAVA_LONG, sge + SGE_ADDR, address);
        memory.set(ValueLayout.JAVA_INT, sge + SGE_LENGTH, length);
        memory.set(ValueLayout.JAVA_INT, sge + SGE_LKEY, lkey);
        return this;
    }

    /** Sets SGE {@code slot} to {@code length} bytes at {@code offset} of a registered region. */
    public SendWorkRequest sge(int slot, MemoryRegion region, long offset, int length) {
        region.checkRange(offset, length);
        return sge(slot, region.address() + offset, length, region.lkey());
    }

    /** How many of this request's SGEs are used. */
    public SendWorkRequest sgeCount(int count) {
        if (count < 0 || count > maxSge) {
            throw new IllegalArgumentException("SGE count " + count + " outside a request with " + maxSge + " slots");
        }
        memory.set(ValueLayout.JAVA_INT, wr + NUM_SGE, count);
        return this;
    }

    /** RDMA_READ of {@code length} bytes at {@code remoteAddress} into one local SGE. */
    public SendWorkRequest rdmaRead(long wrId, int flags, MemoryRegion local, long localOffset, int length,
                                    long remoteAddress, int rkey) {
        return reset().wrId(wrId).opcode(WorkRequestOpcode.RDMA_READ).flags(flags)
                .remote(remoteAddress, rkey).sge(0, local, localOffset, length).sgeCount(1);
    }

    public long wrId() {
        return memory.get(ValueLayout.JAVA_LONG, wr + WR_ID);
    }

    public int opcodeCode() {
        return memory.get(ValueLayout.JAVA_INT, wr + OPCODE);
    }

    public int flags() {
        return memory.get(ValueLayout.JAVA_INT, wr + SEND_FLAGS);
    }

    public int immediate() {
        return memory.get(BE_INT, wr + IMM);
    }

    public int sgeCount() {
        return memory.get(ValueLayout.JAVA_INT, wr + NUM_SGE);
    }

    public long sgeAddress(int slot) {
        return memory.get(ValueLayout.JAVA_LONG, sgeOffset(slot) + SGE_ADDR);
    }

    public int sgeLength(int slot) {
        return memory.get(ValueLayout.JAVA_INT, sgeOffset(slot) + SGE_LENGTH);
    }

    public int sgeLkey(int slot) {
        return memory.get(ValueLayout.JAVA_INT, sgeOffset(slot) + SGE_LKEY);
    }

    /** Remote address of an RDMA (not atomic) request. */
    public long remoteAddress() {
        return memory.get(ValueLayout.JAVA_LONG, wr + RDMA_ADDR);
    }

    public int rkey() {
        return memory.get(ValueLayout.JAVA_INT, wr + RDMA_RKEY);
    }

    /** The key a LOCAL_INV or SEND_WITH_INV takes back (the union with the immediate, host order). */
    public int invalidateRkey() {
        return memory.get(ValueLayout.JAVA_INT, wr + INVALIDATE_RKEY);
    }

    /** A BIND_MW's window handle ({@link MemoryWindow#handle()}). */
    public long bindWindowHandle() {
        return memory.get(ValueLayout.JAVA_LONG, wr + BIND_MW);
    }

    public int bindNewRkey() {
        return memory.get(ValueLayout.JAVA_INT, wr + BIND_RKEY);
    }

    /** A BIND_MW's region handle ({@link MemoryRegion#handle()}), 0 for none. */
    public long bindRegionHandle() {
        return memory.get(ValueLayout.JAVA_LONG, wr + BIND_MR);
    }

    public long bindAddress() {
        return memory.get(ValueLayout.JAVA_LONG, wr + BIND_ADDR);
    }

    public long bindLength() {
        return memory.get(ValueLayout.JAVA_LONG, wr + BIND_LENGTH);
    }

    public int bindAccess() {
        return memory.get(ValueLayout.JAVA_INT, wr + BIND_ACCESS);
    }

    public long atomicRemoteAddress() {
        return memory.get(ValueLayout.JAVA_LONG, wr + ATOMIC_ADDR);
    }

    public int atomicRkey() {
        return memory.get(ValueLayout.JAVA_INT, wr + ATOMIC_RKEY);
    }

    public long compareAdd() {
        return memory.get(ValueLayout.JAVA_LONG, wr + ATOMIC_COMPARE_ADD);
    }

    public long swap() {
        return memory.get(ValueLayout.JAVA_LONG, wr + ATOMIC_SWAP);
    }

    private long sgeOffset(int slot) {
        if (slot < 0 || slot >= maxSge) {
            throw new IndexOutOfBoundsException("SGE slot " + slot + " of a request with " + maxSge + " slots");
        }
        return sges + slot * SendWorkRequests.SGE_BYTES;
    }
}
