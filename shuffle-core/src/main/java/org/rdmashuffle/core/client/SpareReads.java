package org.rdmashuffle.core.client;

import java.util.ArrayDeque;

import org.rdmashuffle.core.protocol.BlockId;

/**
 * A fetcher's whole-block {@link Wanted}s and {@link Read}s, reused once their block is delivered: a
 * block read from a cached layout then allocates nothing of its own here. Only a delivered block's
 * go back (no other structure holds them then). Kept up to {@link #MAX} (a reduce task's first
 * requests: 48 MiB of 4 KiB blocks, all live at once anyway) while the fetcher is busy, dropped after
 * {@link #IDLE_NANOS} idle ({@link #clear}, by its fetcher): tasks of a stage come one after
 * another, stages seconds apart. Not thread-safe: its fetcher's lock.
 */
final class SpareReads {
    static final int MAX = 1 << 14;
    static final long IDLE_NANOS = 10_000_000_000L;

    private final ArrayDeque<Read> reads = new ArrayDeque<>();
    private final ArrayDeque<Wanted> wanted = new ArrayDeque<>();

    Wanted wanted(BlockId id, BlockFetchListener listener) {
        return wanted.isEmpty() ? new Wanted(id, listener) : wanted.pop().set(id, listener);
    }

    /** The read of a whole block (not a piece). */
    Read read(Wanted w, long address, long length, int rkey, long rawLength, long describedAt, long queuedAt) {
        return reads.isEmpty() ? new Read(w, address, length, rkey, rawLength, describedAt, queuedAt)
                : reads.pop().set(w, address, length, rkey, rawLength, describedAt, queuedAt);
    }

    /** Takes back a delivered whole block's read and want (nothing else may hold them). */
    void delivered(Read r) {
        if (reads.size() < MAX) {
            wanted.push(r.wanted.set(null, null));
            reads.push(r.set(null, 0, 0, 0, 0, 0, 0));
        }
    }

    boolean isEmpty() {
        return reads.isEmpty() && wanted.isEmpty();
    }

    /** Drops the spares: the fetcher has been idle a while, and what a burst left behind goes back to the heap. */
    void clear() {
        reads.clear();
        wanted.clear();
    }
}
