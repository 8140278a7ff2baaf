package org.rdmashuffle.verbs;

/** {@code enum ibv_qp_state}. */
public enum QueuePairState {
    RESET, INIT, RTR, RTS, SQD, SQE, ERR, UNKNOWN;

    public int code() {
        return ordinal();
    }

    public static QueuePairState of(int code) {
        return code >= 0 && code < UNKNOWN.ordinal() ? values()[code] : UNKNOWN;
    }
}
