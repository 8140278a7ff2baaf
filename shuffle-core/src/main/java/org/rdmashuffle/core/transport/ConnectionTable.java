package org.rdmashuffle.core.transport;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An engine's live data connections: each queue pair's number to its connection, so that
 * completions and device events find where they go, and the serving ones, which the connection caps
 * count and the engine's close retires. A connection is routable from {@link #track} until
 * {@link #untrack}, the first step of retiring it: a completion that comes after is for nobody and
 * is dropped, never handed to another connection (QP numbers are not reused while the old QP lives).
 */
public final class ConnectionTable {
    private final Map<Integer, DataConnection> byQpNumber = new ConcurrentHashMap<>();
    private final Set<DataConnection> serving = ConcurrentHashMap.newKeySet();

    /** Routes the completions of {@code c}'s queue pairs to it. */
    public void track(DataConnection c) {
        for (int i = 0; i < c.queuePairs(); i++) {
            byQpNumber.put(c.qpNumber(i), c);
        }
    }

    /** {@link #track}s a connection that serves a peer's fetches. */
    public void trackServing(DataConnection c) {
        serving.add(c);
        track(c);
    }

    /** Routes no more completions to {@code c} and forgets it. */
    public void untrack(DataConnection c) {
        for (int i = 0; i < c.queuePairs(); i++) {
            byQpNumber.remove(c.qpNumber(i), c);
        }
        serving.remove(c);
    }

    /** The connection a queue pair belongs to; null once it was untracked. */
    public DataConnection byQpNumber(int qpNumber) {
        return byQpNumber.get(qpNumber);
    }

    public int servingCount() {
        return serving.size();
    }

    /** Queue pairs of the serving connections. */
    public int servingQueuePairs() {
        int qps = 0;
        for (DataConnection c : serving) {
            qps += c.queuePairs();
        }
        return qps;
    }

    /** The serving connections now (a copy: retiring them changes the table). */
    public List<DataConnection> serving() {
        return List.copyOf(serving);
    }
}
