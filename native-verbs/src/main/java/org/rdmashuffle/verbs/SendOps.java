package org.rdmashuffle.verbs;

/**
 * {@code enum ibv_qp_create_send_ops_flags}: the operations a queue pair created for the extended
 * post path ({@link WorkRequestBuilder}) will post. A device that cannot do one refuses the QP.
 */
public final class SendOps {
    public static final int RDMA_WRITE = 1;
    public static final int RDMA_WRITE_WITH_IMM = 1 << 1;
    public static final int SEND = 1 << 2;
    public static final int SEND_WITH_IMM = 1 << 3;
    public static final int RDMA_READ = 1 << 4;
    public static final int ATOMIC_CMP_AND_SWP = 1 << 5;
    public static final int ATOMIC_FETCH_AND_ADD = 1 << 6;
    public static final int LOCAL_INV = 1 << 7;
    public static final int BIND_MW = 1 << 8;
    public static final int SEND_WITH_INV = 1 << 9;
    public static final int TSO = 1 << 10;
    /** {@code IBV_QP_EX_WITH_FLUSH} (rdma-core 43 and later: an older library refuses the QP). */
    public static final int FLUSH = 1 << 11;
    public static final int ATOMIC_WRITE = 1 << 12;
    /** The memory-window operations: bind a type 2 window, invalidate it locally, or with a send. */
    public static final int WINDOW_OPS = LOCAL_INV | BIND_MW | SEND_WITH_INV;
    /** The operations {@link WorkRequestBuilder} offers. */
    public static final int ALL_BUILDER_OPS = RDMA_WRITE | RDMA_WRITE_WITH_IMM | SEND | SEND_WITH_IMM | RDMA_READ
            | ATOMIC_CMP_AND_SWP | ATOMIC_FETCH_AND_ADD;

    private SendOps() {
    }

    public static String describe(int ops) {
        String[] names = {"RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "SEND", "SEND_WITH_IMM", "RDMA_READ", "ATOMIC_CMP_AND_SWP",
            "ATOMIC_FETCH_AND_ADD", "LOCAL_INV", "BIND_MW", "SEND_WITH_INV", "TSO", "FLUSH", "ATOMIC_WRITE"};
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < names.length; i++) {
            if ((ops & (1 << i)) != 0) {
                sb.append(names[i]).append('|');
            }
        }
        return sb.isEmpty() ? "0" : sb.substring(0, sb.length() - 1);
    }
}
