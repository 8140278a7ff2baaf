package org.rdmashuffle.core.client;

import org.rdmashuffle.core.metrics.FetchCounts;
import org.rdmashuffle.core.protocol.BlockId;

/**
 * Counts each block of one fetch call as it reaches the caller's listener: its bytes, and the time
 * since the call, delivered or failed. One per fetch call; its calls come from completion pollers,
 * so it adds two counter updates and nothing else.
 */
final class CountingListener implements BlockFetchListener {
    private final BlockFetchListener listener;
    private final FetchCounts counts;
    private final long calledAt;

    CountingListener(BlockFetchListener listener, FetchCounts counts, long calledAt) {
        this.listener = listener;
        this.counts = counts;
        this.calledAt = calledAt;
    }

    @Override
    public void onBlockFetched(FetchedBlock block) {
        counts.delivered(block.size(), System.nanoTime() - calledAt);
        listener.onBlockFetched(block);
    }

    @Override
    public void onBlockFetchFailure(BlockId block, Throwable cause) {
        counts.failed(System.nanoTime() - calledAt);
        listener.onBlockFetchFailure(block, cause);
    }
}
