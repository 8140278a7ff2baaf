package org.rdmashuffle.verbs;

/** {@code enum ibv_send_flags}: bits of {@code struct ibv_send_wr.send_flags}. */
public final class SendFlags {
    /** Wait for earlier RDMA_READs and atomics on this QP to complete before this one starts. */
    public static final int FENCE = 1;
    /** Produce a completion for this work request (unless set, only errors complete). */
    public static final int SIGNALED = 1 << 1;
    /** Ask the receiver's CQ to raise a solicited event. */
    public static final int SOLICITED = 1 << 2;
    /** Copy the SGEs' bytes into the work request at post time; no lkey is needed. */
    public static final int INLINE = 1 << 3;
    /**
     * {@code IBV_SEND_IP_CSUM}: offload the IP checksum of a UD or raw-packet QP's payload. Refused by
     * {@link SendWorkRequest#flags}: this API makes RC queue pairs only, which carry no IP header to sum.
     */
    public static final int IP_CSUM = 1 << 4;

    private SendFlags() {
    }

    public static String describe(int flags) {
        StringBuilder sb = new StringBuilder();
        if ((flags & FENCE) != 0) sb.append("FENCE|");
        if ((flags & SIGNALED) != 0) sb.append("SIGNALED|");
        if ((flags & SOLICITED) != 0) sb.append("SOLICITED|");
        if ((flags & INLINE) != 0) sb.append("INLINE|");
        if ((flags & IP_CSUM) != 0) sb.append("IP_CSUM|");
        return sb.isEmpty() ? "0" : sb.substring(0, sb.length() - 1);
    }
}
