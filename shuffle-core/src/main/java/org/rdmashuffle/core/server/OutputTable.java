package org.rdmashuffle.core.server;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * The outputs one {@link MapOutputRegistry} knows, by application and shuffle, then map id: what a
 * request looks up first. Only the table; what an output holds (its region, its index's heap) is
 * given back by the registry when the table lets it go. Guarded by the registry's lock.
 */
final class OutputTable {
    /**
     * Hashed for every registration and every block request (on the poller): plain methods, where a
     * record's generated ones showed in profiles as method-handle frames.
     */
    private static final class ShuffleKey {
        final String app;
        final int shuffleId;

        ShuffleKey(String app, int shuffleId) {
            this.app = app;
            this.shuffleId = shuffleId;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof ShuffleKey k && k.shuffleId == shuffleId && k.app.equals(app);
        }

        @Override
        public int hashCode() {
            return 31 * app.hashCode() + shuffleId;
        }
    }

    private final Map<ShuffleKey, Map<Long, MapOutput>> outputs = new HashMap<>();

    /** The output, or null if none is known by that id. */
    MapOutput get(String app, int shuffleId, long mapId) {
        Map<Long, MapOutput> maps = outputs.get(new ShuffleKey(app, shuffleId));
        return maps == null ? null : maps.get(mapId);
    }

    /** The output; NoSuchMapOutputException if none is known by that id. */
    MapOutput required(String app, int shuffleId, long mapId) {
        MapOutput out = get(app, shuffleId, mapId);
        if (out == null) {
            throw new NoSuchMapOutputException("no map output " + mapId + " of shuffle " + shuffleId
                    + (app.equals(MapOutputRegistry.OWN) ? "" : " of " + app) + " is registered here");
        }
        return out;
    }

    /** Enters {@code out}; returns the output it replaces (a re-attempt of the same map), if any. */
    MapOutput put(MapOutput out) {
        return outputs.computeIfAbsent(new ShuffleKey(out.app, out.shuffleId), s -> new HashMap<>()).put(out.mapId, out);
    }

    /** Takes {@code out} out of the table if it is still the one entered under its id. */
    void remove(MapOutput out) {
        ShuffleKey key = new ShuffleKey(out.app, out.shuffleId);
        Map<Long, MapOutput> maps = outputs.get(key);
        if (maps != null && maps.remove(out.mapId, out) && maps.isEmpty()) {
            outputs.remove(key);
        }
    }

    /** Takes out every output of a shuffle; returns them. */
    Collection<MapOutput> removeShuffle(String app, int shuffleId) {
        Map<Long, MapOutput> maps = outputs.remove(new ShuffleKey(app, shuffleId));
        return maps == null ? List.of() : maps.values();
    }

    /** Takes out every output of an application; returns them. */
    List<MapOutput> removeApplication(String app) {
        List<MapOutput> removed = new ArrayList<>();
        for (Iterator<Map.Entry<ShuffleKey, Map<Long, MapOutput>>> it = outputs.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<ShuffleKey, Map<Long, MapOutput>> e = it.next();
            if (e.getKey().app.equals(app)) {
                it.remove();
                removed.addAll(e.getValue().values());
            }
        }
        return removed;
    }

    /** Takes out every output; returns them. */
    List<MapOutput> removeAll() {
        List<MapOutput> removed = new ArrayList<>();
        outputs.values().forEach(maps -> removed.addAll(maps.values()));
        outputs.clear();
        return removed;
    }

    int size() {
        int n = 0;
        for (Map<Long, MapOutput> maps : outputs.values()) {
            n += maps.size();
        }
        return n;
    }
}
