package org.rdmashuffle.core.client;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * Blocks to ask a peer for that wait for room among the requests in flight: a {@link PeerFetcher}
 * keeps at most {@link #MAX_REQUESTS_IN_FLIGHT} FetchRequests unanswered, and what its fetch calls
 * ask for beyond that waits here, in order, until an answer frees a place; then the blocks of several
 * calls go out together, as full requests. Many concurrent fetch calls of small blocks (a reduce
 * stage's tasks, each asking for its partition of every output) then cost a request per batch rather
 * than one each, and never fill the sender's queue: each request needs a send buffer, and a
 * connection with too many sends waiting is cut as a peer that takes none. A block waits here only
 * while requests of its fetcher are awaited, so the fetch timeout on those covers it too.
 * Not thread-safe: its fetcher's lock.
 */
final class UnsentBlocks {
    /**
     * FetchRequests one fetcher keeps unanswered. Below the send buffers an application has
     * (sendBuffers, 128 by default) for two peers at once, and enough to keep a peer's server threads
     * busy: each request holds up to maxBlocksPerRequest blocks.
     */
    static final int MAX_REQUESTS_IN_FLIGHT = 48;

    private final ArrayDeque<Wanted> waiting = new ArrayDeque<>();

    void addAll(List<Wanted> blocks) {
        waiting.addAll(blocks);
    }

    boolean isEmpty() {
        return waiting.isEmpty();
    }

    int size() {
        return waiting.size();
    }

    /** Whether a request may go out now, with {@code awaited} requests unanswered. */
    static boolean room(int awaited) {
        return awaited < MAX_REQUESTS_IN_FLIGHT;
    }

    /** The next request's blocks: from the front, up to {@code max} of the first block's shuffle, in order. */
    List<Wanted> nextBatch(int max) {
        List<Wanted> batch = new ArrayList<>(Math.min(max, waiting.size()));
        int shuffle = waiting.getFirst().id.shuffleId();
        while (!waiting.isEmpty() && batch.size() < max && waiting.getFirst().id.shuffleId() == shuffle) {
            batch.add(waiting.removeFirst());
        }
        return batch;
    }

    /** Every block waiting, none after: the connection failed. */
    List<Wanted> drain() {
        List<Wanted> all = new ArrayList<>(waiting);
        waiting.clear();
        return all;
    }
}
