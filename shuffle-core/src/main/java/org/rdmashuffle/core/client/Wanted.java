package org.rdmashuffle.core.client;

import org.rdmashuffle.core.protocol.BlockId;

/**
 * A block a caller asked for, and who to tell: the same object follows the block through every
 * step. Reused by its fetcher once the block is delivered ({@link #set}).
 */
final class Wanted {
    BlockId id;
    BlockFetchListener listener;
    /** When its read first queued for room in the bounds (-1: not yet); kept when it is described again. */
    long queuedSince = -1;

    Wanted(BlockId id, BlockFetchListener listener) {
        this.id = id;
        this.listener = listener;
    }

    Wanted set(BlockId id, BlockFetchListener listener) {
        this.id = id;
        this.listener = listener;
        this.queuedSince = -1;
        return this;
    }
}
