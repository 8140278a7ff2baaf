package org.rdmashuffle.core.client;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The RDMA_READ chains a {@link PeerFetcher} posted and awaits, by the work request id of their
 * signaled last request, and the bytes they will land. Not thread-safe: its fetcher's lock.
 */
final class ChainsInFlight {
    /** Reads posted as one chain of {@code requests} work requests, only the last signaled. */
    record Chain(List<Read> reads, long bytes, int requests, long postedAt) {
    }

    private final Map<Long, Chain> chains = new LinkedHashMap<>();
    private long bytes;

    void add(long id, Chain c) {
        chains.put(id, c);
        bytes += c.bytes();
    }

    /** The chain of {@code id}, no longer in flight; null if unknown (of a retired connection, or already failed). */
    Chain remove(long id) {
        Chain c = chains.remove(id);
        if (c != null) {
            bytes -= c.bytes();
        }
        return c;
    }

    int size() {
        return chains.size();
    }

    long bytes() {
        return bytes;
    }

    /** Whether a chain was posted longer than {@code timeoutNanos} ago. */
    boolean anyOlderThan(long now, long timeoutNanos) {
        for (Chain c : chains.values()) {
            if (now - c.postedAt() > timeoutNanos) {
                return true;
            }
        }
        return false;
    }

    /** Read work requests posted and not yet completed. */
    int readRequests() {
        int n = 0;
        for (Chain c : chains.values()) {
            n += c.requests();
        }
        return n;
    }

    /** Takes out every chain: its fetcher failed. */
    List<Chain> drain() {
        List<Chain> all = new ArrayList<>(chains.values());
        chains.clear();
        bytes = 0;
        return all;
    }
}
