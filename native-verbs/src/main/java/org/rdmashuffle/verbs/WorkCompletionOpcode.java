package org.rdmashuffle.verbs;

/** {@code enum ibv_wc_opcode}: what a completion completed. */
public enum WorkCompletionOpcode {
    SEND(0), RDMA_WRITE(1), RDMA_READ(2), COMP_SWAP(3), FETCH_ADD(4), BIND_MW(5), LOCAL_INV(6), TSO(7), FLUSH(8), ATOMIC_WRITE(9),
    RECV(128), RECV_RDMA_WITH_IMM(129), UNKNOWN(-1);

    private final int code;

    WorkCompletionOpcode(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }

    public static WorkCompletionOpcode of(int code) {
        return switch (code) {
            case 0 -> SEND;
            case 1 -> RDMA_WRITE;
            case 2 -> RDMA_READ;
            case 3 -> COMP_SWAP;
            case 4 -> FETCH_ADD;
            case 5 -> BIND_MW;
            case 6 -> LOCAL_INV;
            case 7 -> TSO;
            case 8 -> FLUSH;
            case 9 -> ATOMIC_WRITE;
            case 128 -> RECV;
            case 129 -> RECV_RDMA_WITH_IMM;
            default -> UNKNOWN;
        };
    }
}
