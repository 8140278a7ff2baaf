package org.rdmashuffle.verbs;

/**
 * A shared receive queue ({@code struct ibv_srq}): one pool of posted receive buffers consumed by
 * every queue pair attached to it.
 */
public interface SharedReceiveQueue extends AutoCloseable {

    /** Posts the first {@code count} receive requests, linked ({@code ibv_post_srq_recv}). */
    void postReceive(ReceiveWorkRequests requests, int count);

    SharedReceiveQueueAttributes query();

    /**
     * Arms the low-water limit: when fewer than {@code limit} receives remain posted, the context
     * raises one {@link AsyncEvent.Type#SRQ_LIMIT_REACHED} event and the limit disarms.
     */
    void armLimit(int limit);

    @Override
    void close();
}
