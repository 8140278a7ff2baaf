package org.rdmashuffle.verbs.ibverbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteOrder;

import org.rdmashuffle.verbs.ScatterGatherList;
import org.rdmashuffle.verbs.VerbsException;
import org.rdmashuffle.verbs.WorkRequestBuilder;
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

    IbvWorkRequestBuilder(int qpNumber, MemorySegment qpEx) {
        this.qpNumber = qpNumber;
        this.qpx = qpEx.reinterpret(ibv_qp_ex.layout().byteSize());
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
        if (rc != 0) {
            throw new VerbsException("ibv_wr_complete", Math.abs(rc),
                    "QP " + qpNumber + ": nothing since ibv_wr_start was posted");
        }
    }

    @Override
    public void abort() {
        try {
            VOID_QP.invokeExact(need(abort, "ibv_wr_abort"), qpx);
        } catch (Throwable t) {
            throw rethrow("ibv_wr_abort", t);
        }
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
