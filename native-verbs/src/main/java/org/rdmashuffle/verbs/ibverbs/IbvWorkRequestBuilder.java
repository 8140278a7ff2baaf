package org.rdmashuffle.verbs.ibverbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteOrder;

import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.MemoryWindow;
import org.rdmashuffle.verbs.ScatterGatherList;
import org.rdmashuffle.verbs.SendOps;
import org.rdmashuffle.verbs.VerbsException;
import org.rdmashuffle.verbs.WorkRequestBuilder;
import org.rdmashuffle.verbs.ffi.ibv_mw_bind_info;
import org.rdmashuffle.verbs.ffi.ibv_qp_ex;

/**
 * The {@code ibv_wr_*} builder of one QP. Like {@code ibv_post_send}, these verbs are
 * {@code static inline} in verbs.h, each {@code qp->wr_xxx(qp, ...)}: the function pointers are read
 * from {@code struct ibv_qp_ex} once, at QP creation, and called through downcall handles made for
 * their signatures. {@code wr_id} and {@code wr_flags} are fields of the struct, written directly.
 *
 * <p>Every call is {@code critical} (no thread-state transition) except {@code wr_start}: it takes
 * the provider's QP lock, and a thread blocked on a lock must stay visible to the JVM's safepoints.
 */
final class IbvWorkRequestBuilder implements WorkRequestBuilder {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final Linker.Option CRITICAL = Linker.Option.critical(false);
    private static final boolean LITTLE_ENDIAN = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

    private static final MethodHandle VOID_QP = LINKER.downcallHandle(FunctionDescriptor.ofVoid(ADDRESS), CRITICAL);
    private static final MethodHandle VOID_QP_BLOCKING = LINKER.downcallHandle(FunctionDescriptor.ofVoid(ADDRESS));
    private static final MethodHandle INT_QP = LINKER.downcallHandle(FunctionDescriptor.of(JAVA_INT, ADDRESS), CRITICAL);
    private static final MethodHandle QP_INT = LINKER.downcallHandle(FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT), CRITICAL);
    private static final MethodHandle QP_INT_LONG = LINKER.downcallHandle(
            FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG), CRITICAL);
    private static final MethodHandle QP_INT_LONG_INT = LINKER.downcallHandle(
            FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_INT), CRITICAL);
    private static final MethodHandle QP_INT_LONG_LONG = LINKER.downcallHandle(
            FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG), CRITICAL);
    private static final MethodHandle QP_INT_LONG_LONG_LONG = LINKER.downcallHandle(
            FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG), CRITICAL);
    private static final MethodHandle QP_LONG_ADDRESS = LINKER.downcallHandle(
            FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, ADDRESS), CRITICAL);
    /** void (*)(struct ibv_qp_ex *, void *addr, size_t): the address passed as a 64-bit integer (LP64), so no segment is made per call. */
    private static final MethodHandle QP_ADDRESS_LONG = LINKER.downcallHandle(
            FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_LONG), CRITICAL);

    /** void (*wr_bind_mw)(struct ibv_qp_ex *, struct ibv_mw *, uint32_t rkey, const struct ibv_mw_bind_info *). */
    private static final MethodHandle QP_ADDRESS_INT_ADDRESS = LINKER.downcallHandle(
            FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_INT, ADDRESS), CRITICAL);
    /** void (*wr_flush)(struct ibv_qp_ex *, uint32_t rkey, uint64_t remote_addr, size_t len, uint8_t type, uint8_t level). */
    private static final MethodHandle QP_INT_LONG_LONG_BYTE_BYTE = LINKER.downcallHandle(
            FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_BYTE, JAVA_BYTE), CRITICAL);
    /**
     * wr_flush follows wr_atomic_write in struct ibv_qp_ex from rdma-core 43 on; the headers these
     * bindings were made from (44) end at wr_atomic_write, so its offset is the next pointer's. It is
     * read only for a QP created with {@link SendOps#FLUSH}: a library without FLUSH refuses that QP,
     * so the field exists whenever it is read.
     */
    private static final long WR_FLUSH = ibv_qp_ex.wr_atomic_write$offset() + ADDRESS.byteSize();
    /** void (*wr_atomic_write)(struct ibv_qp_ex *, uint32_t rkey, uint64_t remote_addr, const void *atomic_wr). */
    private static final MethodHandle QP_INT_LONG_ADDRESS = LINKER.downcallHandle(
            FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_LONG, ADDRESS), CRITICAL);

    private static final long WR_ID = ibv_qp_ex.wr_id$offset();
    private static final long WR_FLAGS = ibv_qp_ex.wr_flags$offset();

    private final int qpNumber;
    private final MemorySegment qpx;
    private final MemorySegment start;
    private final MemorySegment complete;
    private final MemorySegment abort;
    private final MemorySegment rdmaRead;
    private final MemorySegment rdmaWrite;
    private final MemorySegment rdmaWriteImm;
    private final MemorySegment send;
    private final MemorySegment sendImm;
    private final MemorySegment cmpSwp;
    private final MemorySegment fetchAdd;
    private final MemorySegment setSge;
    private final MemorySegment setSgeList;
    private final MemorySegment setInline;
    private final MemorySegment setInlineList;
    private final MemorySegment bindMw;
    private final MemorySegment localInv;
    private final MemorySegment sendInv;
    private final MemorySegment flush;
    private final MemorySegment atomicWrite;
    /** The bind_info of wr_bind_mw: providers copy it into the WQE during the call, so one is reused. */
    private final Arena arena = Arena.ofShared();
    private final MemorySegment bindInfo = arena.allocate(ibv_mw_bind_info.layout());
    /** wr_atomic_write's 8 bytes: copied into the WQE during the call (rxe, mlx5), so one is reused too. */
    private final MemorySegment atomicValue = arena.allocate(ValueLayout.JAVA_LONG);
    /** Windows bound since start and the keys they take once complete posts them. */
    private long[] boundWindows = new long[4];
    private int[] boundKeys = new int[4];
    private int bound;

    IbvWorkRequestBuilder(int qpNumber, MemorySegment qpEx, int sendOps) {
        this.qpNumber = qpNumber;
        this.qpx = qpEx.reinterpret((sendOps & SendOps.FLUSH) != 0 ? WR_FLUSH + ADDRESS.byteSize() : ibv_qp_ex.layout().byteSize());
        start = fn(ibv_qp_ex.wr_start$offset());
        complete = fn(ibv_qp_ex.wr_complete$offset());
        abort = fn(ibv_qp_ex.wr_abort$offset());
        rdmaRead = fn(ibv_qp_ex.wr_rdma_read$offset());
        rdmaWrite = fn(ibv_qp_ex.wr_rdma_write$offset());
        rdmaWriteImm = fn(ibv_qp_ex.wr_rdma_write_imm$offset());
        send = fn(ibv_qp_ex.wr_send$offset());
        sendImm = fn(ibv_qp_ex.wr_send_imm$offset());
        cmpSwp = fn(ibv_qp_ex.wr_atomic_cmp_swp$offset());
        fetchAdd = fn(ibv_qp_ex.wr_atomic_fetch_add$offset());
        setSge = fn(ibv_qp_ex.wr_set_sge$offset());
        setSgeList = fn(ibv_qp_ex.wr_set_sge_list$offset());
        setInline = fn(ibv_qp_ex.wr_set_inline_data$offset());
        setInlineList = fn(ibv_qp_ex.wr_set_inline_data_list$offset());
        bindMw = fn(ibv_qp_ex.wr_bind_mw$offset());
        localInv = fn(ibv_qp_ex.wr_local_inv$offset());
        sendInv = fn(ibv_qp_ex.wr_send_inv$offset());
        flush = (sendOps & SendOps.FLUSH) != 0 ? fn(WR_FLUSH) : MemorySegment.NULL;
        atomicWrite = (sendOps & SendOps.ATOMIC_WRITE) != 0 ? fn(ibv_qp_ex.wr_atomic_write$offset()) : MemorySegment.NULL;
    }

    /** A function pointer of the struct; NULL ones (operations the provider lacks) fail when used. */
    private MemorySegment fn(long offset) {
        return qpx.get(ValueLayout.ADDRESS, offset);
    }

    private static int network(int hostOrder) {
        return LITTLE_ENDIAN ? Integer.reverseBytes(hostOrder) : hostOrder;
    }

    private MemorySegment need(MemorySegment fn, String name) {
        if (fn.equals(MemorySegment.NULL)) {
            throw new UnsupportedOperationException(name + " is not provided for QP " + qpNumber);
        }
        return fn;
    }

    @Override
    public void start() {
        bound = 0;
        try {
            VOID_QP_BLOCKING.invokeExact(need(start, "ibv_wr_start"), qpx);
        } catch (Throwable t) {
            throw rethrow("ibv_wr_start", t);
        }
    }

    @Override
    public WorkRequestBuilder wrId(long wrId) {
        qpx.set(ValueLayout.JAVA_LONG, WR_ID, wrId);
        return this;
    }

    @Override
    public WorkRequestBuilder flags(int sendFlags) {
        qpx.set(ValueLayout.JAVA_INT, WR_FLAGS, sendFlags);
        return this;
    }

    @Override
    public WorkRequestBuilder rdmaRead(int rkey, long remoteAddress) {
        try {
            QP_INT_LONG.invokeExact(need(rdmaRead, "ibv_wr_rdma_read"), qpx, rkey, remoteAddress);
        } catch (Throwable t) {
            throw rethrow("ibv_wr_rdma_read", t);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder rdmaWrite(int rkey, long remoteAddress) {
        try {
            QP_INT_LONG.invokeExact(need(rdmaWrite, "ibv_wr_rdma_write"), qpx, rkey, remoteAddress);
        } catch (Throwable t) {
            throw rethrow("ibv_wr_rdma_write", t);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder rdmaWriteWithImmediate(int rkey, long remoteAddress, int immediate) {
        try {
            QP_INT_LONG_INT.invokeExact(need(rdmaWriteImm, "ibv_wr_rdma_write_imm"), qpx, rkey, remoteAddress,
                    network(immediate));
        } catch (Throwable t) {
            throw rethrow("ibv_wr_rdma_write_imm", t);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder send() {
        try {
            VOID_QP.invokeExact(need(send, "ibv_wr_send"), qpx);
        } catch (Throwable t) {
            throw rethrow("ibv_wr_send", t);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder sendWithImmediate(int immediate) {
        try {
            QP_INT.invokeExact(need(sendImm, "ibv_wr_send_imm"), qpx, network(immediate));
        } catch (Throwable t) {
            throw rethrow("ibv_wr_send_imm", t);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder compareAndSwap(int rkey, long remoteAddress, long compare, long swap) {
        try {
            QP_INT_LONG_LONG_LONG.invokeExact(need(cmpSwp, "ibv_wr_atomic_cmp_swp"), qpx, rkey, remoteAddress, compare, swap);
        } catch (Throwable t) {
            throw rethrow("ibv_wr_atomic_cmp_swp", t);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder fetchAndAdd(int rkey, long remoteAddress, long add) {
        try {
            QP_INT_LONG_LONG.invokeExact(need(fetchAdd, "ibv_wr_atomic_fetch_add"), qpx, rkey, remoteAddress, add);
        } catch (Throwable t) {
            throw rethrow("ibv_wr_atomic_fetch_add", t);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder bindWindow(MemoryWindow window, int newRkey, MemoryRegion region, long address, long length,
                                         int windowAccess) {
        ibv_mw_bind_info.mr(bindInfo, region == null ? MemorySegment.NULL : MemorySegment.ofAddress(region.handle()));
        ibv_mw_bind_info.addr(bindInfo, address);
        ibv_mw_bind_info.length(bindInfo, length);
        ibv_mw_bind_info.mw_access_flags(bindInfo, windowAccess);
        try {
            QP_ADDRESS_INT_ADDRESS.invokeExact(need(bindMw, "ibv_wr_bind_mw"), qpx, MemorySegment.ofAddress(window.handle()),
                    newRkey, bindInfo);
        } catch (Throwable t) {
            throw rethrow("ibv_wr_bind_mw", t);
        }
        if (bound == boundWindows.length) {
            boundWindows = java.util.Arrays.copyOf(boundWindows, bound * 2);
            boundKeys = java.util.Arrays.copyOf(boundKeys, bound * 2);
        }
        boundWindows[bound] = window.handle();
        boundKeys[bound++] = newRkey;
        return this;
    }

    @Override
    public WorkRequestBuilder localInvalidate(int rkey) {
        try {
            QP_INT.invokeExact(need(localInv, "ibv_wr_local_inv"), qpx, rkey);
        } catch (Throwable t) {
            throw rethrow("ibv_wr_local_inv", t);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder sendWithInvalidate(int rkey) {
        try {
            QP_INT.invokeExact(need(sendInv, "ibv_wr_send_inv"), qpx, rkey);
        } catch (Throwable t) {
            throw rethrow("ibv_wr_send_inv", t);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder flush(int rkey, long remoteAddress, long length, int placement, int level) {
        if (flush.equals(MemorySegment.NULL)) {
            throw new IllegalStateException("ibv_wr_flush: QP " + qpNumber + " was created without SendOps.FLUSH"
                    + " (a QP gets it only from a library and device with FLUSH)");
        }
        try {
            QP_INT_LONG_LONG_BYTE_BYTE.invokeExact(flush, qpx, rkey, remoteAddress, length, (byte) placement, (byte) level);
        } catch (Throwable t) {
            throw rethrow("ibv_wr_flush", t);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder atomicWrite(int rkey, long remoteAddress, long value) {
        if (atomicWrite.equals(MemorySegment.NULL)) {
            throw new IllegalStateException("ibv_wr_atomic_write: QP " + qpNumber + " was created without SendOps.ATOMIC_WRITE"
                    + " (a QP gets it only on a device with atomic write)");
        }
        atomicValue.set(ValueLayout.JAVA_LONG, 0, value);
        try {
            QP_INT_LONG_ADDRESS.invokeExact(atomicWrite, qpx, rkey, remoteAddress, atomicValue);
        } catch (Throwable t) {
            throw rethrow("ibv_wr_atomic_write", t);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder sge(int lkey, long address, int length) {
        try {
            QP_INT_LONG_INT.invokeExact(need(setSge, "ibv_wr_set_sge"), qpx, lkey, address, length);
        } catch (Throwable t) {
            throw rethrow("ibv_wr_set_sge", t);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder sgeList(ScatterGatherList list, int count) {
        checkCount(list, count);
        try {
            QP_LONG_ADDRESS.invokeExact(need(setSgeList, "ibv_wr_set_sge_list"), qpx, (long) count, list.sges());
        } catch (Throwable t) {
            throw rethrow("ibv_wr_set_sge_list", t);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder inlineData(long address, int length) {
        try {
            QP_ADDRESS_LONG.invokeExact(need(setInline, "ibv_wr_set_inline_data"), qpx, address,
                    Integer.toUnsignedLong(length));
        } catch (Throwable t) {
            throw rethrow("ibv_wr_set_inline_data", t);
        }
        return this;
    }

    @Override
    public WorkRequestBuilder inlineDataList(ScatterGatherList list, int count) {
        checkCount(list, count);
        try {
            QP_LONG_ADDRESS.invokeExact(need(setInlineList, "ibv_wr_set_inline_data_list"), qpx, (long) count,
                    list.dataBuffers());
        } catch (Throwable t) {
            throw rethrow("ibv_wr_set_inline_data_list", t);
        }
        return this;
    }

    @Override
    public void complete() {
        int rc;
        try {
            rc = (int) INT_QP.invokeExact(need(complete, "ibv_wr_complete"), qpx);
        } catch (Throwable t) {
            throw rethrow("ibv_wr_complete", t);
        }
        int binds = bound;
        bound = 0;
        if (rc != 0) {
            throw new VerbsException("ibv_wr_complete", Math.abs(rc),
                    "QP " + qpNumber + ": nothing since ibv_wr_start was posted");
        }
        for (int i = 0; i < binds; i++) {
            IbvMemoryWindow.rekey(boundWindows[i], boundKeys[i]);
        }
    }

    @Override
    public void abort() {
        bound = 0;
        try {
            VOID_QP.invokeExact(need(abort, "ibv_wr_abort"), qpx);
        } catch (Throwable t) {
            throw rethrow("ibv_wr_abort", t);
        }
    }

    /** Frees the builder's bind_info (the QP is destroyed). */
    void close() {
        arena.close();
    }

    private static void checkCount(ScatterGatherList list, int count) {
        if (count < 0 || count > list.capacity()) {
            throw new IllegalArgumentException(count + " entries from a list of " + list.capacity());
        }
    }

    private static RuntimeException rethrow(String call, Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        return new VerbsException(call, "downcall failed: " + t);
    }
}
