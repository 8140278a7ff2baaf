package org.rdmashuffle.core.server;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.function.Consumer;

/**
 * The indexes one {@link MapOutputRegistry} holds for outputs found on disk: the heap they take,
 * counted against its limit and the budget's (its user's, the node's), and those with no region and
 * no registration under way in least-recently-used order, the first forgotten to make room (they are
 * found again if asked for). Outputs this process registered itself are not counted: an engine's own
 * are its own business. Guarded by the registry's lock.
 */
final class IndexCache {
    private final RegistryLimits limits;
    private final RegistryBudget budget;
    private final String user;
    /** Resolved outputs with no region and no registration under way: what may be forgotten. */
    private final LinkedHashMap<MapOutput, Boolean> idle = new LinkedHashMap<>(16, 0.75f, true);
    private long bytes;

    IndexCache(RegistryLimits limits, RegistryBudget budget, String user) {
        this.limits = limits;
        this.budget = budget;
        this.user = user;
    }

    /**
     * Reserves {@code heap} bytes of index for {@code forWhom}, forgetting this registry's least
     * recently used idle outputs ({@code forget} takes each out of the registry's tables) as needed.
     * Says who is short if only the user's or the node's budget is and {@code lastTry} is not set;
     * otherwise throws IndexMemoryExhaustedException.
     */
    RegistryBudget.Shortage reserve(long heap, MapOutput forWhom, boolean lastTry, Consumer<MapOutput> forget) {
        if (heap > limits.indexBytes()) {
            throw new IndexMemoryExhaustedException(forWhom + ": its index needs " + heap
                    + " bytes of heap, more than the limit of " + limits.indexBytes());
        }
        while (bytes + heap > limits.indexBytes() && forgetOne(forget)) {
            // this application's least recently used outputs without a region
        }
        if (bytes + heap > limits.indexBytes()) {
            throw new IndexMemoryExhaustedException(forWhom + ": the indexes held for this application take "
                    + bytes + " of its " + limits.indexBytes() + " bytes, all of outputs being registered or read");
        }
        RegistryBudget.Shortage s;
        while ((s = budget.tryReserveIndex(user, heap)) != RegistryBudget.Shortage.NONE && forgetOne(forget)) {
            // the user's or the node's index heap is short: this application's idle indexes first
        }
        if (s == RegistryBudget.Shortage.NONE) {
            bytes += heap;
            return s;
        }
        if (!lastTry) {
            return s;
        }
        throw new IndexMemoryExhaustedException(forWhom + ": the " + (s == RegistryBudget.Shortage.USER ? "user's" : "node's")
                + " index heap is spent on outputs being registered or read");
    }

    /** Forgets the least recently used idle output ({@code forget} takes it out of the tables); false if none. */
    boolean forgetOne(Consumer<MapOutput> forget) {
        Iterator<MapOutput> eldest = idle.keySet().iterator();
        if (!eldest.hasNext()) {
            return false;
        }
        forget.accept(eldest.next()); // which ends in release, taking it out of idle
        return true;
    }

    /** {@code out} (found on disk) has no region and no registration under way: it may be forgotten. */
    void idle(MapOutput out) {
        idle.put(out, Boolean.TRUE);
    }

    /** {@code out} is being registered: not to be forgotten now. */
    void busy(MapOutput out) {
        idle.remove(out);
    }

    /** {@code out}'s blocks were asked for: the most recently used. */
    void touch(MapOutput out) {
        idle.get(out);
    }

    /** {@code out} is forgotten: its heap is given back. */
    void release(MapOutput out) {
        idle.remove(out);
        long heap = out.index.heapBytes();
        bytes -= heap;
        budget.releaseIndex(user, heap);
    }

    long bytes() {
        return bytes;
    }

    boolean hasIdle() {
        return !idle.isEmpty();
    }
}
