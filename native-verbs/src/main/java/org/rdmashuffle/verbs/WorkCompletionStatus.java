package org.rdmashuffle.verbs;

/** {@code enum ibv_wc_status}, with the texts {@code ibv_wc_status_str} gives. */
public enum WorkCompletionStatus {
    SUCCESS("success"),
    LOC_LEN_ERR("local length error"),
    LOC_QP_OP_ERR("local QP operation error"),
    LOC_EEC_OP_ERR("local EE context operation error"),
    LOC_PROT_ERR("local protection error"),
    WR_FLUSH_ERR("Work Request Flushed Error"),
    MW_BIND_ERR("memory management operation error"),
    BAD_RESP_ERR("bad response error"),
    LOC_ACCESS_ERR("local access error"),
    REM_INV_REQ_ERR("remote invalid request error"),
    REM_ACCESS_ERR("remote access error"),
    REM_OP_ERR("remote operation error"),
    RETRY_EXC_ERR("transport retry counter exceeded"),
    RNR_RETRY_EXC_ERR("RNR retry counter exceeded"),
    LOC_RDD_VIOL_ERR("local RDD violation error"),
    REM_INV_RD_REQ_ERR("remote invalid RD request"),
    REM_ABORT_ERR("aborted error"),
    INV_EECN_ERR("invalid EE context number"),
    INV_EEC_STATE_ERR("invalid EE context state"),
    FATAL_ERR("fatal error"),
    RESP_TIMEOUT_ERR("response timeout error"),
    GENERAL_ERR("general error"),
    TM_ERR("TM error"),
    TM_RNDV_INCOMPLETE("TM software rendezvous");

    private static final WorkCompletionStatus[] BY_CODE = values();

    private final String description;

    WorkCompletionStatus(String description) {
        this.description = description;
    }

    /** The numeric value in {@code struct ibv_wc.status}. */
    public int code() {
        return ordinal();
    }

    /** The text libibverbs' {@code ibv_wc_status_str} gives for this status. */
    public String description() {
        return description;
    }

    /** The status for a code; codes this build does not know map to {@link #GENERAL_ERR}. */
    public static WorkCompletionStatus of(int code) {
        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : GENERAL_ERR;
    }
}
