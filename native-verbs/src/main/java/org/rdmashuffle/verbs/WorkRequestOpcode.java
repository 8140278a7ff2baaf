package org.rdmashuffle.verbs;

/** {@code enum ibv_wr_opcode}: the operations a send work request can carry. */
public enum WorkRequestOpcode {
    RDMA_WRITE(0),
    RDMA_WRITE_WITH_IMM(1),
    SEND(2),
    SEND_WITH_IMM(3),
    RDMA_READ(4),
    ATOMIC_CMP_AND_SWP(5),
    ATOMIC_FETCH_AND_ADD(6),
    /** Takes back the type 2 window named by {@code invalidate_rkey}; a local operation. */
    LOCAL_INV(7),
    /** Binds a type 2 window to a range of a region, for this QP ({@code wr.bind_mw}); a local operation. */
    BIND_MW(8),
    /** A SEND whose arrival takes back the receiver's type 2 window named by {@code invalidate_rkey}. */
    SEND_WITH_INV(9),
    /**
     * FLUSH: posted only with {@link WorkRequestBuilder#flush} ({@code ibv_wr_flush}); {@code struct
     * ibv_send_wr} has no fields for its placement and level, so {@link SendWorkRequest#opcode} refuses it.
     */
    FLUSH(14),
    /**
     * ATOMIC_WRITE: posted only with {@link WorkRequestBuilder#atomicWrite} ({@code ibv_wr_atomic_write});
     * {@code struct ibv_send_wr} has no field for its 8 bytes, so {@link SendWorkRequest#opcode} refuses it.
     */
    ATOMIC_WRITE(15);

    private final int code;

    WorkRequestOpcode(int code) {
        this.code = code;
    }

    /** The numeric value in {@code struct ibv_send_wr.opcode}. */
    public int code() {
        return code;
    }

    /** The opcode for a code, or null for an opcode this API does not post. */
    public static WorkRequestOpcode of(int code) {
        return switch (code) {
            case 0 -> RDMA_WRITE;
            case 1 -> RDMA_WRITE_WITH_IMM;
            case 2 -> SEND;
            case 3 -> SEND_WITH_IMM;
            case 4 -> RDMA_READ;
            case 5 -> ATOMIC_CMP_AND_SWP;
            case 6 -> ATOMIC_FETCH_AND_ADD;
            case 7 -> LOCAL_INV;
            case 8 -> BIND_MW;
            case 9 -> SEND_WITH_INV;
            case 14 -> FLUSH;
            case 15 -> ATOMIC_WRITE;
            default -> null;
        };
    }

    /** True when the request carries a remote address and rkey ({@code wr.rdma}, {@code wr.atomic}, a flush, an atomic write). */
    public boolean isOneSided() {
        return this == RDMA_WRITE || this == RDMA_WRITE_WITH_IMM || this == RDMA_READ || isAtomic() || this == FLUSH
                || this == ATOMIC_WRITE;
    }

    /** True for the operations the sending device performs on itself, with nothing sent to the peer. */
    public boolean isLocal() {
        return this == LOCAL_INV || this == BIND_MW;
    }

    public boolean isAtomic() {
        return this == ATOMIC_CMP_AND_SWP || this == ATOMIC_FETCH_AND_ADD;
    }

    public boolean carriesImmediate() {
        return this == RDMA_WRITE_WITH_IMM || this == SEND_WITH_IMM;
    }
}
