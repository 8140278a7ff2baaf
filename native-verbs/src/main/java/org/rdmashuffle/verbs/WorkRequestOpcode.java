package org.rdmashuffle.verbs;

/** {@code enum ibv_wr_opcode}: the operations a send work request can carry. */
public enum WorkRequestOpcode {
    RDMA_WRITE(0),
    RDMA_WRITE_WITH_IMM(1),
    SEND(2),
    SEND_WITH_IMM(3),
    RDMA_READ(4),
    ATOMIC_CMP_AND_SWP(5),
    ATOMIC_FETCH_AND_ADD(6);

    private static final WorkRequestOpcode[] BY_CODE = values();

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
        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    }

    /** True when the request carries a remote address and rkey ({@code wr.rdma} or {@code wr.atomic}). */
    public boolean isOneSided() {
        return this != SEND && this != SEND_WITH_IMM;
    }

    public boolean isAtomic() {
        return this == ATOMIC_CMP_AND_SWP || this == ATOMIC_FETCH_AND_ADD;
    }

    public boolean carriesImmediate() {
        return this == RDMA_WRITE_WITH_IMM || this == SEND_WITH_IMM;
    }
}
