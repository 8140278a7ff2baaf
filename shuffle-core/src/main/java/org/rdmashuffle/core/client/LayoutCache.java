package org.rdmashuffle.core.client;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

import org.rdmashuffle.core.protocol.MapOutputLayout;

/**
 * The map-output layouts one peer sent, so that blocks of an output already touched are read with no
 * request message. An entry is used for half the server's lease from when it was described: the
 * server keeps the region registered for a whole lease from then, so a read posted within half of it
 * never finds the region gone. Invalidated by the adapters when Spark or MapReduce says an output is
 * lost or a shuffle is unregistered, and with its connection (a new one starts empty). Bounded by
 * partitions held, least recently used out first. Not thread-safe: its {@link PeerFetcher}'s lock.
 */
final class LayoutCache {
    /** Partition offsets held per peer: 512 KiB of longs. */
    static final int MAX_PARTITIONS = 1 << 16;

    record Entry(MapOutputLayout layout, long describedAt) {
    }

    private final LinkedHashMap<OutputKey, Entry> entries = new LinkedHashMap<>(16, 0.75f, true);
    /** Filled in by each lookup: no key per block. */
    private final OutputKey probe = new OutputKey(0, 0);
    private final long maxAgeNanos;
    private int partitions;

    LayoutCache(long maxAgeNanos) {
        this.maxAgeNanos = maxAgeNanos;
    }

    void put(MapOutputLayout layout, long describedAt) {
        if (layout.partitions() > MAX_PARTITIONS) {
            return;
        }
        Entry old = entries.put(new OutputKey(layout.shuffleId(), layout.mapId()), new Entry(layout, describedAt));
        partitions += layout.partitions() - (old == null ? 0 : old.layout().partitions());
        for (Iterator<Entry> it = entries.values().iterator(); partitions > MAX_PARTITIONS && it.hasNext(); ) {
            partitions -= it.next().layout().partitions();
            it.remove();
        }
    }

    /** The layout of an output, if one was described less than half a lease ago. */
    Entry get(int shuffleId, long mapId, long now) {
        Entry e = entries.get(probe.of(shuffleId, mapId));
        if (e != null && now - e.describedAt() > maxAgeNanos) {
            entries.remove(probe);
            partitions -= e.layout().partitions();
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
            partitions -= e.layout().partitions();
        }
    }

    void forget(int shuffleId) {
        for (Iterator<Map.Entry<OutputKey, Entry>> it = entries.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<OutputKey, Entry> e = it.next();
            if (e.getKey().shuffleId == shuffleId) {
                partitions -= e.getValue().layout().partitions();
                it.remove();
            }
        }
    }
}
