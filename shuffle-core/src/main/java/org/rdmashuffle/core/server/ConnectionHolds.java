package org.rdmashuffle.core.server;

import java.util.HashMap;
import java.util.Map;

/**
 * What one serving connection holds of its application's map outputs through held answers
 * ({@code Message.FetchResponse#held}, control protocol version 5): per output, how many of its held
 * answers described it and were not released yet. An output any connection holds stays registered
 * until the lease of its latest held answer ends ({@link MapOutput#leased}); once none holds it, only
 * the lease of answers that were not held keeps it. A release that names more answers than were held
 * gives back what was held, and one naming an output this connection does not hold is ignored: a
 * reducer gives back only its own connection's holds. Everything goes with the connection
 * ({@link #dropAll}); an output held after that is not counted (the answer is not sent then).
 *
 * <p>Bounded by what the connection was told: an entry per output described to it in a held answer.
 * Guarded by the lock of its application's {@link MapOutputRegistry}; touched by the poller that
 * receives the connection's messages, the server threads that answer them, and whoever retires it.
 */
public final class ConnectionHolds {
    private final Map<MapOutput, int[]> held = new HashMap<>();
    private boolean dropped;

    /** Under the registry's lock: one more held answer describes {@code out}, at {@code now}. */
    void hold(MapOutput out, long now) {
        if (dropped) {
            return;
        }
        int[] answers = held.computeIfAbsent(out, k -> new int[1]);
        if (answers[0]++ == 0) {
            out.holders++;
        }
        out.heldAt = now;
    }

    /** Under the registry's lock: {@code answers} of the held answers about {@code out} are done with. */
    void release(MapOutput out, int answers) {
        int[] n = held.get(out);
        if (n == null) {
            return;
        }
        n[0] -= Math.min(n[0], answers);
        if (n[0] == 0) {
            held.remove(out);
            out.holders--;
        }
    }

    /** Under the registry's lock: the connection went; what it held is given back, and it holds nothing from now on. */
    void dropAll() {
        dropped = true;
        for (MapOutput out : held.keySet()) {
            out.holders--;
        }
        held.clear();
    }

    /** Under the registry's lock: outputs held (tests). */
    int outputs() {
        return held.size();
    }
}
