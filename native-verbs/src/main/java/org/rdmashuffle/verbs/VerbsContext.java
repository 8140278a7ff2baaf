package org.rdmashuffle.verbs;

import java.time.Duration;

/**
 * An open device ({@code struct ibv_context}). Owns nothing it creates: every PD, CQ and channel
 * made from it has its own owner and must be closed before the context is.
 */
public interface VerbsContext extends AutoCloseable {

    VerbsDevice device();

    DeviceAttributes queryDevice();

    PortAttributes queryPort(int portNumber);

    /** One GID table entry with its type ({@code ibv_query_gid_ex}); null when the entry is empty. */
    GidEntry queryGid(int portNumber, int index);

    ProtectionDomain allocateProtectionDomain();

    CompletionChannel createCompletionChannel();

    /**
     * Creates a completion queue with room for at least {@code minEntries} completions.
     *
     * @param channel the channel its events are delivered on, or null for a polled-only CQ
     * @param vector the completion vector (interrupt) to use, 0 when unsure
     */
    CompletionQueue createCompletionQueue(int minEntries, CompletionChannel channel, int vector);

    /**
     * Waits up to {@code timeout} for the next asynchronous event (port change, QP fatal, SRQ limit
     * reached, ...), acknowledges it and returns it; null on timeout.
     */
    AsyncEvent awaitAsyncEvent(Duration timeout);

    /**
     * Makes a thread waiting in {@link #awaitAsyncEvent} return null now (or the next wait at once):
     * the waiter's way to be stopped without a short timeout. Any thread; a no-op once closed.
     */
    void wakeAsyncEventWaiter();

    @Override
    void close();
}
