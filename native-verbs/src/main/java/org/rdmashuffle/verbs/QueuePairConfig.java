package org.rdmashuffle.verbs;

import java.util.Objects;

/**
 * How to create an RC queue pair ({@code struct ibv_qp_init_attr}). With an SRQ, {@code maxRecvWr}
 * and {@code maxRecvSge} are ignored.
 */
public record QueuePairConfig(
        CompletionQueue sendCompletionQueue,
        CompletionQueue receiveCompletionQueue,
        SharedReceiveQueue sharedReceiveQueue,
        int maxSendWr,
        int maxRecvWr,
        int maxSendSge,
        int maxRecvSge,
        int maxInlineData,
        boolean signalAll) {

    public QueuePairConfig {
        Objects.requireNonNull(sendCompletionQueue, "sendCompletionQueue");
        Objects.requireNonNull(receiveCompletionQueue, "receiveCompletionQueue");
        if (maxSendWr < 1 || maxSendSge < 1) {
            throw new IllegalArgumentException("a queue pair needs at least one send WR and one SGE");
        }
    }

    /** A config with one CQ for both queues, its own receive queue, and no inline data. */
    public static QueuePairConfig of(CompletionQueue cq, int maxSendWr, int maxRecvWr, int maxSge) {
        return new QueuePairConfig(cq, cq, null, maxSendWr, maxRecvWr, maxSge, maxSge, 0, false);
    }

    public QueuePairConfig withSharedReceiveQueue(SharedReceiveQueue srq) {
        return new QueuePairConfig(sendCompletionQueue, receiveCompletionQueue, srq, maxSendWr, maxRecvWr,
                maxSendSge, maxRecvSge, maxInlineData, signalAll);
    }

    public QueuePairConfig withMaxInlineData(int bytes) {
        return new QueuePairConfig(sendCompletionQueue, receiveCompletionQueue, sharedReceiveQueue, maxSendWr,
                maxRecvWr, maxSendSge, maxRecvSge, bytes, signalAll);
    }

    public QueuePairConfig withSignalAll(boolean all) {
        return new QueuePairConfig(sendCompletionQueue, receiveCompletionQueue, sharedReceiveQueue, maxSendWr,
                maxRecvWr, maxSendSge, maxRecvSge, maxInlineData, all);
    }
}
