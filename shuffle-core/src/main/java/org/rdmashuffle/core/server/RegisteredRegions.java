package org.rdmashuffle.core.server;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.function.LongSupplier;

import org.rdmashuffle.verbs.MemoryRegion;

/**
 * The regions of one {@link MapOutputRegistry}: its registered outputs in least-recently-described
 * order, the pages and regions they (and registrations under way) count against its limits and the
 * budget, and the regions taken off the books but not closed yet. Room is made by deregistering the
 * least recently described outside their lease and not held by a connection ({@link MapOutput#leased}: a
 * reducer may be reading the others). Guarded by the
 * registry's lock; the regions are closed outside it ({@link #takeToClose}).
 */
final class RegisteredRegions {
    private final RegistryLimits limits;
    private final RegistryBudget budget;
    private final String user;
    private final long leaseNanos;
    private final LongSupplier clock;
    /** Where an output found on disk goes when its region does: back among the idle indexes. */
    private final IndexCache indexes;
    /** Where an eviction is counted for operators. */
    private final org.rdmashuffle.core.metrics.RegistrationCounts counts;
    private final LinkedHashMap<MapOutput, Boolean> lru = new LinkedHashMap<>(16, 0.75f, true);
    /** Deregistered, to be closed outside the lock (closing waits for transfers still using them). */
    private final List<MemoryRegion> toClose = new ArrayList<>();
    /** Pages registered or reserved by registrations under way, and their regions. */
    private long bytes;
    private int count;

    RegisteredRegions(RegistryLimits limits, RegistryBudget budget, String user, long leaseNanos, LongSupplier clock,
                      IndexCache indexes, org.rdmashuffle.core.metrics.RegistrationCounts counts) {
        this.counts = counts;
        this.limits = limits;
        this.budget = budget;
        this.user = user;
        this.leaseNanos = leaseNanos;
        this.clock = clock;
        this.indexes = indexes;
    }

    /**
     * Reserves a region of {@code forWhom}'s pages under this registry's limits and in the budget (its
     * user's and the node's), deregistering this application's least recently described regions
     * outside their lease as needed. Says who is short if only the budget is and {@code lastTry} is not
     * set (the caller then takes other applications' idle regions, outside the lock, and tries again);
     * otherwise throws RegisteredMemoryExhaustedException naming the numbers.
     */
    RegistryBudget.Shortage reserve(MapOutput forWhom, boolean lastTry) {
        long want = forWhom.pinnedBytes();
        if (want > limits.bytes()) {
            throw new RegisteredMemoryExhaustedException(forWhom + " pins " + want
                    + " bytes (whole pages), more than the registered-memory limit of " + limits.bytes());
        }
        while ((bytes + want > limits.bytes() || count + 1 > limits.regions()) && releaseOne()) {
            // this application's least recently described regions outside their lease
        }
        if (bytes + want > limits.bytes() || count + 1 > limits.regions()) {
            throw new RegisteredMemoryExhaustedException("registering " + want + " bytes of " + forWhom
                    + " would exceed the registered-memory limits of " + limits.bytes() + " bytes and " + limits.regions()
                    + " regions: " + bytes + " bytes in " + count + " regions are registered and all were "
                    + "described within the lease");
        }
        RegistryBudget.Shortage s;
        while ((s = budget.tryReserveRegion(user, want)) != RegistryBudget.Shortage.NONE && releaseOne()) {
            // the user's or the node's budget is short: this application's idle regions first
        }
        if (s == RegistryBudget.Shortage.NONE) {
            bytes += want;
            count++;
            return s;
        }
        if (!lastTry) {
            return s;
        }
        throw new RegisteredMemoryExhaustedException("registering " + want + " bytes of " + forWhom + " would exceed the "
                + (s == RegistryBudget.Shortage.USER ? "user's share of " : "") + "node's registered-memory budget ("
                + budget.usedBytes() + " bytes in " + budget.usedRegions() + " regions in use, all described within the lease)");
    }

    /** Gives back what a reservation for {@code out} took (its registration failed, or its region went). */
    void unreserve(MapOutput out) {
        bytes -= out.pinnedBytes();
        count--;
        budget.releaseRegion(user, out.pinnedBytes());
    }

    /** {@code out}'s file is registered: its region is the most recently described. */
    void added(MapOutput out) {
        lru.put(out, Boolean.TRUE);
    }

    /** {@code out} was just described: the most recently used. */
    void touch(MapOutput out) {
        lru.get(out);
    }

    /**
     * Deregisters the least recently described region outside its lease, to make room (for this
     * registry or, through the budget, another's), and counts it as an eviction; false if there is none.
     */
    boolean releaseOne() {
        long now = clock.getAsLong();
        for (Iterator<MapOutput> it = lru.keySet().iterator(); it.hasNext(); ) {
            MapOutput victim = it.next();
            if (victim.leased(now, leaseNanos)) {
                continue; // a reducer may be reading it
            }
            it.remove();
            deregister(victim);
            counts.evicted();
            return true;
        }
        return false;
    }

    /** Deregisters idle regions until {@code wantBytes} and {@code wantCount} are released or none is left; the bytes released. */
    long release(long wantBytes, int wantCount) {
        long before = bytes;
        int n = 0;
        while ((bytes > before - wantBytes || n < wantCount) && releaseOne()) {
            n++;
        }
        return before - bytes;
    }

    /** Takes {@code out}'s region off the books (out of the LRU already, or never in it); closed by {@link #takeToClose}'s caller. */
    private void deregister(MapOutput out) {
        toClose.add(out.region);
        out.region = null;
        unreserve(out); // given back now, so room made is seen at once; the pages stay pinned until the close
        if (out.resolved && !out.released) {
            indexes.idle(out);
        }
    }

    /** Deregisters {@code out}'s region, if it has one: its output is forgotten. */
    void forget(MapOutput out) {
        if (out.region != null) {
            lru.remove(out);
            deregister(out);
        }
    }

    /** The regions deregistered so far, for the caller to close outside the lock. */
    List<MemoryRegion> takeToClose() {
        if (toClose.isEmpty()) {
            return List.of();
        }
        List<MemoryRegion> now = new ArrayList<>(toClose);
        toClose.clear();
        return now;
    }

    long bytes() {
        return bytes;
    }

    /**
     * Whether more than half of this registry's limits, or of its user's or the node's budget, is
     * registered: held answers then carry no layouts (each would keep its output for a lease), so outputs
     * read go before a lease ends.
     */
    boolean crowded() {
        return bytes > limits.bytes() / 2 || count > limits.regions() / 2 || budget.crowded(user);
    }

    int registered() {
        return lru.size();
    }
}
