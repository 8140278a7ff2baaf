package org.rdmashuffle.core.client;

import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

import org.rdmashuffle.core.protocol.MapOutputLayout;

/**
 * The map-output layouts one peer sent, so that blocks of an output already touched are read with no
 * request message. An entry is used for half the server's lease from when it was described: the
 * server keeps the region registered for a whole lease from then, so a read posted within half of it
 * never finds the region gone. Invalidated by the adapters when Spark or MapReduce says an output is
 * lost or a shuffle is unregistered, and with its connection ({@link #close}: a new one starts empty).
 *
 * <p>Bounded by the engine's {@link LayoutBudget}, shared with every other peer's cache: a layout
 * costs its offsets and its entry ({@link LayoutBudget#cost}). A shuffle's layouts never push out
 * others of the same shuffle: once the budget is spent, a new one is not taken and {@link #room}
 * tells the requests not to ask for more. Reduce tasks read a peer's outputs in the same order one
 * after another, and with more outputs than the cache holds, evicting the least recently used threw
 * out every layout before the next task came back to it, so every request asked for layouts that
 * crossed the wire for nothing; kept, the first ones serve every task. Another shuffle's layouts (a
 * stage done with, whose layouts would otherwise sit until they age out) make room, least recently
 * used first; those another peer's cache holds go when that cache makes room, or with its connection
 * (closed after {@code idleTimeout} unused). Not thread-safe: its {@link PeerFetcher}'s lock.
 */
final class LayoutCache {
    /** Shuffles whose layout size is remembered (a bound: the adapters forget shuffles unregistered). */
    private static final int MAX_SHUFFLES = 1024;
    /** Entries looked at, least recently used first, for one of another shuffle to make room: a bound on a put's work. */
    private static final int EVICTION_SCAN = 64;

    record Entry(MapOutputLayout layout, long describedAt) {
        long cost() {
            return LayoutBudget.cost(layout.partitions());
        }
    }

    private final LinkedHashMap<OutputKey, Entry> entries = new LinkedHashMap<>(16, 0.75f, true); // least recently used first
    /** Bytes held per shuffle (none: no entry). */
    private final HashMap<Integer, Long> bytesOf = new HashMap<>();
    /** What a layout of each shuffle costs, as far as one offered told: what asking for another costs. */
    private final HashMap<Integer, Long> costPerLayout = new HashMap<>();
    /** Filled in by each lookup: no key per block. */
    private final OutputKey probe = new OutputKey(0, 0);
    private final long maxAgeNanos;
    private final LayoutBudget budget;
    /** Bytes of the budget this cache holds. */
    private long bytes;
    /** Closed with its connection: empty, and takes nothing more. */
    private boolean closed;

    LayoutCache(long maxAgeNanos, LayoutBudget budget) {
        this.maxAgeNanos = maxAgeNanos;
        this.budget = budget;
    }

    /** Takes {@code layout}, making room from other shuffles' layouts if it must; false if it was not taken. */
    boolean put(MapOutputLayout layout, long describedAt) {
        if (closed) {
            return false;
        }
        int shuffle = layout.shuffleId();
        long cost = LayoutBudget.cost(layout.partitions());
        if (costPerLayout.size() < MAX_SHUFFLES || costPerLayout.containsKey(shuffle)) {
            costPerLayout.put(shuffle, cost);
        }
        forget(shuffle, layout.mapId()); // described again: taken with its new age
        if (cost > room(shuffle)) {
            return false;
        }
        Iterator<Map.Entry<OutputKey, Entry>> it = entries.entrySet().iterator();
        for (int looked = 0; !budget.tryTake(cost); looked++) {
            if (!it.hasNext() || looked == EVICTION_SCAN) {
                return false;
            }
            Map.Entry<OutputKey, Entry> e = it.next();
            if (e.getKey().shuffleId != shuffle || describedAt - e.getValue().describedAt() > maxAgeNanos) {
                it.remove();
                removed(e.getKey().shuffleId, e.getValue());
            }
        }
        entries.put(new OutputKey(shuffle, layout.mapId()), new Entry(layout, describedAt));
        bytes += cost;
        bytesOf.merge(shuffle, cost, Long::sum);
        return true;
    }

    /**
     * Bytes of {@code shuffleId}'s layouts the cache can still take: what the budget has free, and what
     * this cache holds of other shuffles (they make room).
     */
    long room(int shuffleId) {
        return closed ? 0 : budget.free() + bytes - bytesOf(shuffleId);
    }

    /** What a layout of this shuffle costs, as far as one offered told; 0 if none was. */
    long costPerLayout(int shuffleId) {
        return costPerLayout.getOrDefault(shuffleId, 0L);
    }

    private long bytesOf(int shuffleId) {
        return bytesOf.getOrDefault(shuffleId, 0L);
    }

    private void removed(int shuffleId, Entry e) {
        long cost = e.cost();
        bytes -= cost;
        budget.give(cost);
        long left = bytesOf(shuffleId) - cost;
        if (left > 0) {
            bytesOf.put(shuffleId, left);
        } else {
            bytesOf.remove(shuffleId);
        }
    }

    /** The layout of an output, if one was described less than half a lease ago. */
    Entry get(int shuffleId, long mapId, long now) {
        Entry e = entries.get(probe.of(shuffleId, mapId));
        if (e != null && now - e.describedAt() > maxAgeNanos) {
            entries.remove(probe);
            removed(shuffleId, e);
            return null;
        }
        return e;
    }

    /** Whether a layout of this output is held (of any age). */
    boolean has(int shuffleId, long mapId) {
        return entries.containsKey(probe.of(shuffleId, mapId));
    }

    void forget(int shuffleId, long mapId) {
        Entry e = entries.remove(probe.of(shuffleId, mapId));
        if (e != null) {
            removed(shuffleId, e);
        }
    }

    void forget(int shuffleId) {
        costPerLayout.remove(shuffleId);
        for (Iterator<Map.Entry<OutputKey, Entry>> it = entries.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<OutputKey, Entry> e = it.next();
            if (e.getKey().shuffleId == shuffleId) {
                it.remove();
                removed(shuffleId, e.getValue());
            }
        }
    }

    /** Empties it, giving its bytes back to the budget, and takes nothing more: its connection is gone. */
    void close() {
        for (Entry e : entries.values()) {
            budget.give(e.cost());
        }
        entries.clear();
        bytesOf.clear();
        bytes = 0;
        closed = true;
    }
}
