package org.rdmashuffle.verbs;

/** A completion queue ({@code struct ibv_cq}). */
public interface CompletionQueue extends AutoCloseable {

    /** The number of entries granted, at least what was asked for. */
    int capacity();

    /**
     * Polls up to {@code completions.capacity()} completions into the reusable array and returns
     * how many were written ({@code ibv_poll_cq}). Allocates nothing.
     */
    int poll(WorkCompletions completions);

    /** Arms the CQ to raise one event on its channel at the next (solicited) completion. */
    void requestNotify(boolean solicitedOnly);

    /** Acknowledges events taken from the channel for this CQ ({@code ibv_ack_cq_events}). */
    void acknowledgeEvents(int count);

    /** The channel this CQ reports events on, or null. */
    CompletionChannel channel();

    @Override
    void close();
}
