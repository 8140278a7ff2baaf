package org.rdmashuffle.core.client;

import org.rdmashuffle.core.protocol.BlockId;

/**
 * Where fetched blocks go. Each requested block gets exactly one call, from a completion-poller
 * thread (or from the caller's thread, for a fetch that fails before anything was sent). Calls must
 * return quickly: they hold up every completion behind them.
 */
public interface BlockFetchListener {
    /** The block arrived; the listener owns it now and must {@link FetchedBlock#release()} it. */
    void onBlockFetched(FetchedBlock block);

    /** The block could not be fetched; {@code cause} names the peer and the block. */
    void onBlockFetchFailure(BlockId block, Throwable cause);
}
