package org.rdmashuffle.verbs.util;

import java.net.InetAddress;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * Counts connections accepted and not yet past their handshake, in all and per remote address. One
 * address may hold at most {@code maxPerAddress}; when all {@code max} places are taken, a newcomer
 * from an address holding fewer than the largest holder takes that holder's oldest place (its
 * connection is closed), else it is refused. So a peer that opens thousands and says nothing —
 * from one address or from a handful — holds no more than the others let it: whoever comes from an
 * address with fewer waiting always gets in. The map holds only addresses with a connection waiting.
 */
public final class WaitingConnections {
    /** One connection's place; given back once, by {@link #leave} or by being evicted. */
    public static final class Place {
        private final InetAddress from;
        private final Runnable evict;
        private final String refusal;
        private boolean gone;

        private Place(InetAddress from, Runnable evict, String refusal) {
            this.from = from;
            this.evict = evict;
            this.refusal = refusal;
            this.gone = refusal != null;
        }

        /** Why it was not let in (for the log); null if it holds a place. */
        public String refusal() {
            return refusal;
        }
    }

    private final int max;
    private final int maxPerAddress;
    private final Map<InetAddress, ArrayDeque<Place>> byAddress = new HashMap<>();
    private int total;
    private long evicted;

    public WaitingConnections(int max, int maxPerAddress) {
        this.max = max;
        this.maxPerAddress = maxPerAddress;
    }

    /**
     * Counts a connection from {@code from} in; {@code evict} closes it should a newcomer take its
     * place (run under this object's lock: it must not block). The place says whether it was let in.
     */
    public synchronized Place enter(InetAddress from, Runnable evict) {
        ArrayDeque<Place> mine = byAddress.get(from);
        int held = mine == null ? 0 : mine.size();
        if (held >= maxPerAddress) {
            return new Place(from, evict, maxPerAddress + " connections from that address are already waiting for their handshake");
        }
        if (total >= max) {
            ArrayDeque<Place> largest = null;
            for (ArrayDeque<Place> places : byAddress.values()) {
                if (largest == null || places.size() > largest.size()) {
                    largest = places;
                }
            }
            if (largest == null || largest.size() <= held + 1) {
                return new Place(from, evict, max + " connections are already waiting for their handshake, none from an "
                        + "address with more waiting than this one");
            }
            Place oldest = largest.peekFirst();
            remove(oldest);
            evicted++;
            oldest.evict.run();
        }
        Place p = new Place(from, evict, null);
        byAddress.computeIfAbsent(from, a -> new ArrayDeque<>()).addLast(p);
        total++;
        return p;
    }

    /** Its handshake came, failed or timed out; nothing if it left already (or was evicted). */
    public synchronized void leave(Place p) {
        remove(p);
    }

    private void remove(Place p) {
        if (p.gone) {
            return;
        }
        p.gone = true;
        ArrayDeque<Place> places = byAddress.get(p.from);
        if (places != null) {
            places.remove(p);
            if (places.isEmpty()) {
                byAddress.remove(p.from);
            }
        }
        total--;
    }

    public synchronized int total() {
        return total;
    }

    /** Connections closed to make room for a newcomer from an address with fewer waiting. */
    public synchronized long evicted() {
        return evicted;
    }
}
