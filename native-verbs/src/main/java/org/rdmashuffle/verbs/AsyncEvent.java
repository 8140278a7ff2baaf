package org.rdmashuffle.verbs;

/**
 * An asynchronous event ({@code struct ibv_async_event}), already acknowledged. {@code source}
 * is the object it concerns when this process owns it (a queue pair, SRQ or CQ), else null.
 */
public record AsyncEvent(Type type, int portNumber, Object source) {

    /** {@code enum ibv_event_type}. */
    public enum Type {
        CQ_ERR, QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR, COMM_EST, SQ_DRAINED, PATH_MIG, PATH_MIG_ERR,
        DEVICE_FATAL, PORT_ACTIVE, PORT_ERR, LID_CHANGE, PKEY_CHANGE, SM_CHANGE, SRQ_ERR, SRQ_LIMIT_REACHED,
        QP_LAST_WQE_REACHED, CLIENT_REREGISTER, GID_CHANGE, WQ_FATAL, UNKNOWN;

        public static Type of(int code) {
            return code >= 0 && code < UNKNOWN.ordinal() ? values()[code] : UNKNOWN;
        }
    }
}
