package org.rdmashuffle.core.metrics;

import java.util.concurrent.atomic.LongAdder;

/**
 * What an executor's engine fetched: fetch calls and the round trips (metadata requests) they took,
 * blocks and bytes delivered, blocks failed, each block's latency
 * (from the fetch call that asked for it to its delivery or failure, so queueing behind the in-flight
 * bounds counts: it is what the reducer waited), and the set-up of connections to peers (time of the
 * ones that succeeded, count of the ones that failed).
 */
public final class FetchCounts {
    private final LongAdder fetchCalls = new LongAdder();
    private final LongAdder requests = new LongAdder();
    private final LongAdder blocks = new LongAdder();
    private final LongAdder bytes = new LongAdder();
    private final LongAdder failedBlocks = new LongAdder();
    private final LatencyHistogram blockLatency = new LatencyHistogram();
    private final LatencyHistogram connectionSetUp = new LatencyHistogram();
    private final LongAdder connectionFailures = new LongAdder();

    public void fetchCalled() {
        fetchCalls.increment();
    }

    /** A metadata request sent: one round trip to a peer (one per batch of blocks, plus refreshes and retries). */
    public void requestSent() {
        requests.increment();
    }

    public void delivered(long byteCount, long sinceCallNanos) {
        blocks.increment();
        bytes.add(byteCount);
        blockLatency.recordNanos(sinceCallNanos);
    }

    public void failed(long sinceCallNanos) {
        failedBlocks.increment();
        blockLatency.recordNanos(sinceCallNanos);
    }

    public void connected(long tookNanos) {
        connectionSetUp.recordNanos(tookNanos);
    }

    public void connectionFailed() {
        connectionFailures.increment();
    }

    public Snapshot snapshot() {
        return new Snapshot(fetchCalls.sum(), requests.sum(), blocks.sum(), bytes.sum(), failedBlocks.sum(), blockLatency.snapshot(),
                connectionSetUp.snapshot(), connectionFailures.sum());
    }

    /** @param requests metadata requests sent: round trips to peers */
    public record Snapshot(long fetchCalls, long requests, long blocks, long bytes, long failedBlocks, LatencyHistogram.Snapshot blockLatency,
                           LatencyHistogram.Snapshot connectionSetUp, long connectionFailures) {
        /** Nothing fetched: a side that fetches nothing (a node's service). */
        public static final Snapshot NONE = new FetchCounts().snapshot();
    }
}
