package org.rdmashuffle.core.client;

import org.rdmashuffle.core.buffer.RegisteredBufferPool;

/**
 * What every {@link PeerFetcher} of an engine shares: ids, the registered buffers reads land in, the
 * process-wide {@link FetchBudget} and {@link LayoutBudget}, and the clock its timeouts and leases are
 * measured by. A test gives a fetcher its own (a clock it moves by hand, a pool whose registrations
 * fail on demand).
 */
public interface FetchContext {
    /** A fresh id for a request or a chain; never repeats within the process. */
    long nextId();

    RegisteredBufferPool buffers();

    FetchBudget budget();

    /** The memory every fetcher's {@link LayoutCache} shares ({@code layoutCacheMemory}). */
    LayoutBudget layoutBudget();

    /** A metadata request (a round trip to the peer) was handed to its connection: counted for operators. */
    default void requestSent() {
    }

    /**
     * A fetcher was connected, or took work (its requests and reads registered): the engine's timer
     * looks at its timeouts from now on, and at its idleness once it has none ({@link PeerFetcher#nextCheck}).
     */
    default void workMade() {
    }

    /** Now, in the nanoseconds of {@link System#nanoTime()}. */
    default long nanoTime() {
        return System.nanoTime();
    }
}
