package org.rdmashuffle.core.client;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * The outputs whose layout a request on the way asks for, and the blocks waiting for it. A reduce
 * task's first requests all name the same outputs before any answer is back: the first asks, the
 * blocks of later ones wait for its answer and are read from the layout it brings -- one request and
 * one layout per output instead of a request, a layout and a descriptor per block. A block whose
 * layout does not come (left out of an answer too big for it, or refused) is asked for then. An
 * answer holds as many layouts as fit half the reducer's receive buffer: once an answer showed how
 * many of a shuffle's fit ({@link #room}), a request marks only that many outputs as asked for, and
 * the blocks of the others are asked for at once; a shuffle whose outputs came with no layout at all
 * (MapReduce's, or more partitions than a receive buffer holds) has nothing wait for them. At most
 * {@link #MAX_OUTPUTS} outputs are recorded (beyond, blocks are asked for as before); a layout asked
 * for longer than the layout cache's age ago counts as not on the way. Not thread-safe: its
 * {@link PeerFetcher}'s lock.
 */
final class LayoutsAsked {
    static final int MAX_OUTPUTS = 1 << 14;

    private static final class Asked {
        long since;
        List<Wanted> waiting;

        Asked(long since) {
            this.since = since;
        }
    }

    private final HashMap<OutputKey, Asked> asked = new HashMap<>();
    /** How many layouts of a shuffle's outputs one answer holds, where an answer showed it (0: none at all). */
    private final HashMap<Integer, Integer> room = new HashMap<>();
    private final OutputKey probe = new OutputKey(0, 0);
    private final long maxAgeNanos;

    LayoutsAsked(long maxAgeNanos) {
        this.maxAgeNanos = maxAgeNanos;
    }

    /** How many of this shuffle's layouts one answer holds, as far as answers told (none told: no limit). */
    int room(int shuffleId) {
        return room.getOrDefault(shuffleId, Integer.MAX_VALUE);
    }

    /** An answer that asked for layouts of {@code described} outputs of this shuffle brought {@code brought}. */
    void answeredWith(int shuffleId, int described, int brought) {
        if (brought < described && room.size() < MAX_OUTPUTS) {
            room.put(shuffleId, brought);
        }
    }

    /** Whether a request on the way asks for this output's layout. */
    boolean onTheWay(int shuffleId, long mapId, long now) {
        Asked a = asked.get(probe.of(shuffleId, mapId));
        return a != null && now - a.since <= maxAgeNanos;
    }

    /** Outputs whose layout a request on the way (or overdue, not yet answered) asks for. */
    int onTheWayCount() {
        return asked.size();
    }

    /** A request about to be sent asks for this output's layout. */
    void asking(int shuffleId, long mapId, long now) {
        Asked a = asked.get(probe.of(shuffleId, mapId));
        if (a != null) {
            a.since = now; // asked again (overdue): its waiting blocks wait for this answer too
        } else if (asked.size() < MAX_OUTPUTS) {
            asked.put(new OutputKey(shuffleId, mapId), new Asked(now));
        }
    }

    /** Has {@code w} wait for its output's layout if a request on the way asks for it; false if none does. */
    boolean await(Wanted w, long now) {
        Asked a = asked.get(probe.of(w.id.shuffleId(), w.id.mapId()));
        if (a == null || now - a.since > maxAgeNanos) {
            return false;
        }
        (a.waiting == null ? a.waiting = new ArrayList<>() : a.waiting).add(w);
        return true;
    }

    /**
     * The request that asked for the layouts of {@code blocks}' outputs was answered (with them or
     * not): the blocks that waited for them, to read from the layouts now cached or to ask for.
     */
    List<Wanted> answered(List<Wanted> blocks) {
        List<Wanted> woken = null;
        for (Wanted b : blocks) {
            Asked a = asked.remove(probe.of(b.id.shuffleId(), b.id.mapId()));
            if (a != null && a.waiting != null) {
                (woken == null ? woken = new ArrayList<>() : woken).addAll(a.waiting);
            }
        }
        return woken == null ? List.of() : woken;
    }

    /** Forgets the outputs of a shuffle (unregistered); returns the blocks that waited for them, to ask for. */
    List<Wanted> forget(int shuffleId) {
        room.remove(shuffleId);
        List<Wanted> woken = new ArrayList<>();
        for (Iterator<Map.Entry<OutputKey, Asked>> it = asked.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<OutputKey, Asked> e = it.next();
            if (e.getKey().shuffleId == shuffleId) {
                if (e.getValue().waiting != null) {
                    woken.addAll(e.getValue().waiting);
                }
                it.remove();
            }
        }
        return woken;
    }

    /** Every block waiting, and nothing recorded after: the connection failed. */
    List<Wanted> drain() {
        List<Wanted> all = new ArrayList<>();
        for (Asked a : asked.values()) {
            if (a.waiting != null) {
                all.addAll(a.waiting);
            }
        }
        asked.clear();
        return all;
    }
}
