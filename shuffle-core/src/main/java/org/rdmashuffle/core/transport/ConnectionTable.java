package org.rdmashuffle.core.transport;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An engine's live data connections: each queue pair's number to its connection, so that
 * completions and device events find its owner ({@link ConnectionHandler}), and the serving ones,
 * which the connection caps count and the engine's close retires. A connection is routable from
 * {@link #track} until {@link #retire} untracks it, its first step: a completion that comes after is
 * for nobody and is dropped, never handed to another connection (QP numbers are not reused while the
 * old QP lives). Thread-safe: connections are tracked on dialer and connector threads, retired on any.
 */
public final class ConnectionTable {
    private final Map<Integer, DataConnection> byQpNumber = new ConcurrentHashMap<>();
    private final Set<DataConnection> serving = ConcurrentHashMap.newKeySet();
    /** Gives back the send slots a retired connection's sends still held ({@link MetadataSender#forget}). */
    private final java.util.function.Consumer<DataConnection> sendsForgotten;

    public ConnectionTable(java.util.function.Consumer<DataConnection> sendsForgotten) {
        this.sendsForgotten = sendsForgotten;
    }

    /** Routes the completions of {@code c}'s queue pairs to its owner, which it must have by now. */
    public void track(DataConnection c) {
        if (c.handler() == null) {
            throw new IllegalStateException(c + " is tracked without an owner");
        }
        for (int i = 0; i < c.queuePairs(); i++) {
            byQpNumber.put(c.qpNumber(i), c);
        }
    }

    /** {@link #track}s a connection that serves a peer's fetches. */
    public void trackServing(DataConnection c) {
        serving.add(c);
        track(c);
    }

    /**
     * Destroys a connection's queue pairs and forgets it, in this order: no more completions routed to
     * it, its QPs moved to ERR and what its owner bound to them freed ({@link ConnectionHandler#beforeDestroy}), its QPs destroyed (from then on the device writes into none of its buffers), out of its
     * tenant, its owner told (once, however many paths retire it), then the sends it still had in
     * flight give their slots back. Each step is attempted whatever the ones before did (a failed
     * ibv_destroy_qp still gives the tenant's send slots back and counts the connection out); the
     * first failure is thrown once all were. Idempotent; on any thread.
     */
    public void retire(DataConnection c) {
        CloseSteps steps = new CloseSteps();
        steps.attempt(() -> untrack(c));
        steps.attempt(c::moveToError);
        try {
            c.handler().beforeDestroy(c); // what is bound to its queue pairs goes before they do
        } catch (RuntimeException e) {
            System.getLogger(ConnectionTable.class.getName()).log(System.Logger.Level.WARNING,
                    "rdma-shuffle: freeing what is bound to " + c + " failed; destroying it anyway", e);
        }
        steps.attempt(c::close);
        steps.attempt(() -> c.tenant().connections().remove(c));
        steps.attempt(() -> {
            if (c.markRetired()) {
                c.handler().onRetired(c);
            }
        });
        steps.attempt(() -> sendsForgotten.accept(c));
        steps.rethrow();
    }

    /** Routes no more completions to {@code c} and forgets it. */
    private void untrack(DataConnection c) {
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
