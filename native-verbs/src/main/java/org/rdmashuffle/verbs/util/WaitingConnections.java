package org.rdmashuffle.verbs.util;

import java.net.InetAddress;
import java.util.HashMap;
import java.util.Map;

/**
 * Counts connections accepted and not yet past their handshake, in all and per remote address, and
 * refuses one more beyond either bound: a peer that opens thousands and says nothing holds no more
 * than its share, and leaves room for everyone else's. The map holds only addresses with a
 * connection waiting.
 */
public final class WaitingConnections {
    private final int max;
    private final int maxPerAddress;
    private final Map<InetAddress, Integer> byAddress = new HashMap<>();
    private int total;

    public WaitingConnections(int max, int maxPerAddress) {
        this.max = max;
        this.maxPerAddress = maxPerAddress;
    }

    /** Counts a connection from {@code from} in; null if it may wait, else why not. */
    public synchronized String enter(InetAddress from) {
        if (total >= max) {
            return max + " connections are already waiting for their handshake";
        }
        int mine = byAddress.getOrDefault(from, 0);
        if (mine >= maxPerAddress) {
            return maxPerAddress + " connections from that address are already waiting for their handshake";
        }
        byAddress.put(from, mine + 1);
        total++;
        return null;
    }

    /** Its handshake came, failed or timed out. */
    public synchronized void leave(InetAddress from) {
        int mine = byAddress.getOrDefault(from, 0);
        if (mine <= 1) {
            byAddress.remove(from);
        } else {
            byAddress.put(from, mine - 1);
        }
        total--;
    }

    public synchronized int total() {
        return total;
    }
}
