package org.rdmashuffle.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import org.rdmashuffle.verbs.ffi.ibv_wc;

/**
 * A reusable native array of {@code struct ibv_wc} that {@link CompletionQueue#poll} fills. Read
 * entry {@code i} with the accessors; nothing is copied to the heap. Not thread-safe.
 */
public final class WorkCompletions implements AutoCloseable {
    private static final long WC_BYTES = ibv_wc.layout().byteSize();
    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT.withOrder(ByteOrder.BIG_ENDIAN);
    private static final long WR_ID = ibv_wc.wr_id$offset();
    private static final long STATUS = ibv_wc.status$offset();
    private static final long OPCODE = ibv_wc.opcode$offset();
    private static final long VENDOR_ERR = ibv_wc.vendor_err$offset();
    private static final long BYTE_LEN = ibv_wc.byte_len$offset();
    private static final long IMM = ibv_wc.imm_data$offset();
    private static final long QP_NUM = ibv_wc.qp_num$offset();
    private static final long WC_FLAGS = ibv_wc.wc_flags$offset();
    /** {@code IBV_WC_WITH_IMM}. */
    public static final int WITH_IMMEDIATE = 1 << 1;
    /** {@code IBV_WC_WITH_INV}: a SEND_WITH_INV arrived and took back {@link #invalidatedRkey}. */
    public static final int WITH_INVALIDATE = 1 << 3;

    private final Arena arena;
    private final MemorySegment memory;
    private final int capacity;

    private WorkCompletions(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be positive: " + capacity);
        }
        this.capacity = capacity;
        this.arena = Arena.ofShared();
        this.memory = arena.allocate(capacity * WC_BYTES, 64);
    }

    public static WorkCompletions allocate(int capacity) {
        return new WorkCompletions(capacity);
    }

    public int capacity() {
        return capacity;
    }

    /** For providers: the native array. */
    public MemorySegment memory() {
        return memory;
    }

    public long wrId(int i) {
        return memory.get(ValueLayout.JAVA_LONG, offset(i) + WR_ID);
    }

    public int statusCode(int i) {
        return memory.get(ValueLayout.JAVA_INT, offset(i) + STATUS);
    }

    public WorkCompletionStatus status(int i) {
        return WorkCompletionStatus.of(statusCode(i));
    }

    public boolean isSuccess(int i) {
        return statusCode(i) == 0;
    }

    public WorkCompletionOpcode opcode(int i) {
        return WorkCompletionOpcode.of(opcodeCode(i));
    }

    /** The raw {@code ibv_wc.opcode}; defined only for successful completions. */
    public int opcodeCode(int i) {
        return memory.get(ValueLayout.JAVA_INT, offset(i) + OPCODE);
    }

    public int vendorError(int i) {
        return memory.get(ValueLayout.JAVA_INT, offset(i) + VENDOR_ERR);
    }

    public int byteLength(int i) {
        return memory.get(ValueLayout.JAVA_INT, offset(i) + BYTE_LEN);
    }

    /** Immediate data in host order; valid when {@link #hasImmediate(int)}. */
    public int immediate(int i) {
        return memory.get(BE_INT, offset(i) + IMM);
    }

    public boolean hasImmediate(int i) {
        return (flags(i) & WITH_IMMEDIATE) != 0;
    }

    /** The rkey a SEND_WITH_INV took back ({@code invalidated_rkey}, host order); valid when {@link #hasInvalidated(int)}. */
    public int invalidatedRkey(int i) {
        return memory.get(ValueLayout.JAVA_INT, offset(i) + IMM);
    }

    public boolean hasInvalidated(int i) {
        return (flags(i) & WITH_INVALIDATE) != 0;
    }

    public int qpNumber(int i) {
        return memory.get(ValueLayout.JAVA_INT, offset(i) + QP_NUM);
    }

    public int flags(int i) {
        return memory.get(ValueLayout.JAVA_INT, offset(i) + WC_FLAGS);
    }

    /**
     * For providers that produce completions in Java: writes entry {@code i} as {@code ibv_poll_cq}
     * would ({@code immediate} in host order; stored in network order; with {@link #WITH_INVALIDATE} it is
     * the invalidated rkey, stored as is).
     */
    public void set(int i, long wrId, int status, int opcode, int vendorError, int byteLength, int immediate,
                    int qpNumber, int flags) {
        long o = offset(i);
        memory.set(ValueLayout.JAVA_LONG, o + WR_ID, wrId);
        memory.set(ValueLayout.JAVA_INT, o + STATUS, status);
        memory.set(ValueLayout.JAVA_INT, o + OPCODE, opcode);
        memory.set(ValueLayout.JAVA_INT, o + VENDOR_ERR, vendorError);
        memory.set(ValueLayout.JAVA_INT, o + BYTE_LEN, byteLength);
        // The union: immediate data travels in network order, an invalidated rkey is host order.
        memory.set((flags & WITH_INVALIDATE) != 0 ? ValueLayout.JAVA_INT : BE_INT, o + IMM, immediate);
        memory.set(ValueLayout.JAVA_INT, o + QP_NUM, qpNumber);
        memory.set(ValueLayout.JAVA_INT, o + WC_FLAGS, flags);
    }

    /** An exception describing entry {@code i} as a failed completion (status name, vendor error). */
    public WorkCompletionException failure(int i) {
        return new WorkCompletionException(status(i), vendorError(i), wrId(i), qpNumber(i));
    }

    private long offset(int i) {
        if (i < 0 || i >= capacity) {
            throw new IndexOutOfBoundsException("completion " + i + " of " + capacity);
        }
        return i * WC_BYTES;
    }

    @Override
    public void close() {
        arena.close();
    }
}
