package org.rdmashuffle.verbs;

import java.time.Duration;

/**
 * A completion event channel ({@code struct ibv_comp_channel}): a thread sleeps on it instead of
 * polling. Arm a CQ with {@link CompletionQueue#requestNotify(boolean)}, wait here, acknowledge
 * the event, poll the CQ, re-arm.
 */
public interface CompletionChannel extends AutoCloseable {

    /**
     * Waits up to {@code timeout} for a completion event ({@code ibv_get_cq_event}) and returns the
     * CQ it is for, or null on timeout. The event must be acknowledged with
     * {@link CompletionQueue#acknowledgeEvents(int)} before that CQ is closed; closing does it.
     */
    CompletionQueue awaitEvent(Duration timeout);

    /**
     * Makes a thread waiting in {@link #awaitEvent} return null now (or, if none waits, the next wait
     * return null at once), so a waiter can sleep until there is work and still be stopped at once:
     * on libibverbs an eventfd polled beside the channel's fd. Any thread; a no-op once closed.
     */
    void wakeUp();

    /** The file descriptor, for callers that multiplex it; -1 when the provider has none (software). */
    int fd();

    @Override
    void close();
}
