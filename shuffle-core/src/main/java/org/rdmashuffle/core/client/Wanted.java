package org.rdmashuffle.core.client;

import org.rdmashuffle.core.BlockId;

/** A block a caller asked for, and who to tell: the same object follows the block through every step. */
final class Wanted {
    final BlockId id;
    final BlockFetchListener listener;
    /** When its read first queued for room in the bounds (-1: not yet); kept when it is described again. */
    long queuedSince = -1;

    Wanted(BlockId id, BlockFetchListener listener) {
        this.id = id;
        this.listener = listener;
    }
}
