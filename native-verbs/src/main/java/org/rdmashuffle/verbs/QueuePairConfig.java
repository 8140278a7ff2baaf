package org.rdmashuffle.verbs;

import java.util.Objects;

/**
 * How to create an RC queue pair ({@code struct ibv_qp_init_attr}, or {@code ibv_qp_init_attr_ex}
 * when {@code sendOps} is set). With an SRQ, {@code maxRecvWr} and {@code maxRecvSge} are ignored.
 *
 * @param sendOps {@link SendOps} the QP will post through {@link QueuePair#workRequestBuilder()};
 *     0 for a QP that posts only through {@link QueuePair#postSend}
 * @param passive the passive side of its connection (as RDMA CM's listener): on a provider that
 *     establishes connections itself (the software provider dials over TCP) it never initiates, its
 *     peer does; a server's QP, whose peer's endpoint would otherwise name what it connects to. A
 *     device needs nothing of it: the peers' attributes are exchanged out of band either way.
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
        boolean signalAll,
        int sendOps,
        boolean passive) {

    public QueuePairConfig(CompletionQueue sendCompletionQueue, CompletionQueue receiveCompletionQueue,
                           SharedReceiveQueue sharedReceiveQueue, int maxSendWr, int maxRecvWr, int maxSendSge,
                           int maxRecvSge, int maxInlineData, boolean signalAll) {
        this(sendCompletionQueue, receiveCompletionQueue, sharedReceiveQueue, maxSendWr, maxRecvWr, maxSendSge,
                maxRecvSge, maxInlineData, signalAll, 0, false);
    }

    public QueuePairConfig(CompletionQueue sendCompletionQueue, CompletionQueue receiveCompletionQueue,
                           SharedReceiveQueue sharedReceiveQueue, int maxSendWr, int maxRecvWr, int maxSendSge,
                           int maxRecvSge, int maxInlineData, boolean signalAll, int sendOps) {
        this(sendCompletionQueue, receiveCompletionQueue, sharedReceiveQueue, maxSendWr, maxRecvWr, maxSendSge,
                maxRecvSge, maxInlineData, signalAll, sendOps, false);
    }

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
                maxSendSge, maxRecvSge, maxInlineData, signalAll, sendOps, passive);
    }

    public QueuePairConfig withMaxInlineData(int bytes) {
        return new QueuePairConfig(sendCompletionQueue, receiveCompletionQueue, sharedReceiveQueue, maxSendWr,
                maxRecvWr, maxSendSge, maxRecvSge, bytes, signalAll, sendOps, passive);
    }

    /** Creates the QP for the extended post path, able to post {@code ops} ({@link SendOps}). */
    public QueuePairConfig withSendOps(int ops) {
        return new QueuePairConfig(sendCompletionQueue, receiveCompletionQueue, sharedReceiveQueue, maxSendWr,
                maxRecvWr, maxSendSge, maxRecvSge, maxInlineData, signalAll, ops, passive);
    }

    public QueuePairConfig withSignalAll(boolean all) {
        return new QueuePairConfig(sendCompletionQueue, receiveCompletionQueue, sharedReceiveQueue, maxSendWr,
                maxRecvWr, maxSendSge, maxRecvSge, maxInlineData, all, sendOps, passive);
    }

    /** The passive side of its connection: it never initiates establishing it (see the record's javadoc). */
    public QueuePairConfig asPassive() {
        return new QueuePairConfig(sendCompletionQueue, receiveCompletionQueue, sharedReceiveQueue, maxSendWr,
                maxRecvWr, maxSendSge, maxRecvSge, maxInlineData, signalAll, sendOps, true);
    }
}
