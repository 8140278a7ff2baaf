package org.rdmashuffle.verbs;

/** What {@code ibv_query_qp} reports about a queue pair. */
public record QueuePairAttributes(
        QueuePairState state,
        Mtu pathMtu,
        int destQpNumber,
        int sqPsn,
        int rqPsn,
        int accessFlags,
        int portNumber,
        int maxRdAtomic,
        int maxDestRdAtomic,
        int minRnrTimer,
        int timeout,
        int retryCount,
        int rnrRetry,
        QueuePairCapabilities capabilities) {
}
