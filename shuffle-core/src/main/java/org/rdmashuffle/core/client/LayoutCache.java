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
 * lost or a shuffle is unregistered, and with its connection (a new one starts empty).
 *
 * <p>Bounded by partitions held. A shuffle's layouts never push out others of the same shuffle:
 * once its layouts fill the cache, a new one is not taken and {@link #room} tells the requests not to
 * ask for more. Reduce tasks read a peer's outputs in the same order one after another, and with
 * more outputs than the cache holds, evicting the least recently used (as it did) threw out every
 * layout before the next task came back to it, so every request asked for layouts that crossed the
 * wire for nothing; kept, the first ones serve every task. Another shuffle's layouts (a stage done
 * with, whose layouts would otherwise sit until they age out) make room, least recently used first.
 * Not thread-safe: its {@link PeerFetcher}'s lock.
 */
final class LayoutCache {
    /** Partition offsets held per peer: 512 KiB of longs. */
    static final int MAX_PARTITIONS = 1 << 16;
    /** Shuffles whose layout size is remembered (a bound: the adapters forget shuffles unregistered). */
    private static final int MAX_SHUFFLES = 1024;
    /** Entries looked at, least recently used first, for one of another shuffle to make room: a bound on a put's work. */
    private static final int EVICTION_SCAN = 64;

    record Entry(MapOutputLayout layout, long describedAt) {
    }

    private final LinkedHashMap<OutputKey, Entry> entries = new LinkedHashMap<>(16, 0.75f, true); // least recently used first
    /** Partitions held per shuffle (none: no entry). */
    private final HashMap<Integer, Integer> partitionsOf = new HashMap<>();
    /** Partitions per layout of each shuffle a layout of was offered: what asking for another costs. */
    private final HashMap<Integer, Integer> partitionsPerLayout = new HashMap<>();
    /** Filled in by each lookup: no key per block. */
    private final OutputKey probe = new OutputKey(0, 0);
    private final long maxAgeNanos;
    private int partitions;

    LayoutCache(long maxAgeNanos) {
        this.maxAgeNanos = maxAgeNanos;
    }

    /** Takes {@code layout}, making room from other shuffles' layouts if it must; false if it was not taken. */
    boolean put(MapOutputLayout layout, long describedAt) {
        int shuffle = layout.shuffleId();
        if (partitionsPerLayout.size() < MAX_SHUFFLES || partitionsPerLayout.containsKey(shuffle)) {
            partitionsPerLayout.put(shuffle, layout.partitions());
        }
        forget(shuffle, layout.mapId()); // described again: taken with its new age
        if (layout.partitions() > room(shuffle)) {
            return false;
        }
        Iterator<Map.Entry<OutputKey, Entry>> it = entries.entrySet().iterator();
        for (int looked = 0; partitions + layout.partitions() > MAX_PARTITIONS && it.hasNext() && looked < EVICTION_SCAN; looked++) {
            Map.Entry<OutputKey, Entry> e = it.next();
            if (e.getKey().shuffleId != shuffle || describedAt - e.getValue().describedAt() > maxAgeNanos) {
                it.remove();
                removed(e.getKey().shuffleId, e.getValue());
            }
        }
        if (partitions + layout.partitions() > MAX_PARTITIONS) {
            return false;
        }
        entries.put(new OutputKey(shuffle, layout.mapId()), new Entry(layout, describedAt));
        partitions += layout.partitions();
        partitionsOf.merge(shuffle, layout.partitions(), Integer::sum);
        return true;
    }

    /** Partitions of {@code shuffleId}'s layouts the cache can still take (others' layouts make room). */
    int room(int shuffleId) {
        return MAX_PARTITIONS - partitionsOf(shuffleId);
    }

    /** How many partitions a layout of this shuffle holds, as far as one offered told; 0 if none was. */
    int partitionsPerLayout(int shuffleId) {
        return partitionsPerLayout.getOrDefault(shuffleId, 0);
    }

    private int partitionsOf(int shuffleId) {
        return partitionsOf.getOrDefault(shuffleId, 0);
    }

    private void removed(int shuffleId, Entry e) {
        partitions -= e.layout().partitions();
        int left = partitionsOf(shuffleId) - e.layout().partitions();
        if (left > 0) {
            partitionsOf.put(shuffleId, left);
        } else {
            partitionsOf.remove(shuffleId);
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
        partitionsPerLayout.remove(shuffleId);
        for (Iterator<Map.Entry<OutputKey, Entry>> it = entries.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<OutputKey, Entry> e = it.next();
            if (e.getKey().shuffleId == shuffleId) {
                it.remove();
                removed(shuffleId, e.getValue());
            }
        }
    }
}
