package org.rdmashuffle.core.client;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The memory the map-output layouts of all of an engine's fetchers may take ({@code layoutCacheMemory}).
 * Each peer's {@link LayoutCache} takes from it what a layout it keeps costs ({@link #cost}) and gives
 * it back when the layout goes: pushed out, aged, forgotten, or with its connection (a fetcher that
 * fails or is closed for idleness empties its cache). One budget for the engine, not one per peer:
 * a reducer reading a large shuffle from few peers keeps every layout it needs, and many peers do not
 * multiply the memory. Thread-safe: fetchers of different peers take and give under their own locks.
 */
public final class LayoutBudget {
    /** What an entry costs beyond its offsets (the record, its array's header, the key and the map's node), roughly. */
    static final long ENTRY_OVERHEAD = 128;

    private final long maxBytes;
    private final AtomicLong held = new AtomicLong();

    public LayoutBudget(long maxBytes) {
        if (maxBytes <= 0) {
            throw new IllegalArgumentException("a layout budget must be positive, not " + maxBytes);
        }
        this.maxBytes = maxBytes;
    }

    /** The bytes a layout of {@code partitions} partitions is counted as: its offsets and its entry. */
    static long cost(int partitions) {
        return 8L * (partitions + 1) + ENTRY_OVERHEAD;
    }

    /** Takes {@code bytes} if that many are free. */
    boolean tryTake(long bytes) {
        long h;
        do {
            h = held.get();
            if (h + bytes > maxBytes) {
                return false;
            }
        } while (!held.compareAndSet(h, h + bytes));
        return true;
    }

    void give(long bytes) {
        held.addAndGet(-bytes);
    }

    /** Bytes no cache holds. */
    long free() {
        return maxBytes - held.get();
    }

    /** Bytes the engine's caches hold now: for operators. */
    public long heldBytes() {
        return held.get();
    }
}
