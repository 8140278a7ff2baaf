package org.rdmashuffle.core.server;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * What every application's {@link MapOutputRegistry} of a serving engine draws from: registered bytes,
 * registered regions and index heap ({@link RegistryLimits}), bounded for the whole node and for each
 * user's applications together (on a node's service, each tenant's registered send and receive pools
 * count in its user's and the node's bytes too, for the tenant's life: {@link #tryReservePools}).
 * Each registry also has its own limits (an application's share), so
 * the node's pinned memory, mappings and index heap stay bounded however many applications and users
 * it serves, and no user holds more than its share however many applications it runs.
 *
 * <p>When the node's budget (or a user's) is spent, a registry that needs room takes it from other
 * registries' idle regions (those not described within their lease), the largest holders first —
 * any application's when the node is short, the same user's other applications' when the user is:
 * what one application registered while the node was quiet does not keep another from registering
 * later. A region within its lease is never taken (a reducer may be reading it); what one application
 * can hold that way is bounded by its own limits. Thread-safe; never holds a registry's lock while
 * taking another's (registries call in with theirs held; this one's lock is taken last).
 */
public final class RegistryBudget {
    /** Who lacks room for a reservation. */
    enum Shortage { NONE, USER, NODE }

    private static final class Usage {
        long bytes;
        int regions;
        long indexBytes;

        boolean isEmpty() {
            return bytes == 0 && regions == 0 && indexBytes == 0;
        }
    }

    private final RegistryLimits node;
    private final RegistryLimits perUser;
    private final Usage total = new Usage();
    /** Of {@code total.bytes}, the tenants' pools'; guarded by this. */
    private long poolBytes;
    /** Users with something reserved; guarded by this. */
    private final Map<String, Usage> users = new HashMap<>();
    private final List<MapOutputRegistry> registries = new CopyOnWriteArrayList<>();

    /** Bytes alone bound, for the node and for any user: an engine serving its own outputs, and tests. */
    public RegistryBudget(long limitBytes) {
        this(RegistryLimits.ofBytes(limitBytes), RegistryLimits.ofBytes(limitBytes));
    }

    public RegistryBudget(RegistryLimits node, RegistryLimits perUser) {
        this.node = node;
        this.perUser = perUser;
    }

    /** Takes {@code bytes} and one region for {@code user} if both fit its limits and the node's; else says which is short. */
    synchronized Shortage tryReserveRegion(String user, long bytes) {
        Usage u = users.computeIfAbsent(user, k -> new Usage());
        Shortage s = u.bytes + bytes > perUser.bytes() || u.regions + 1 > perUser.regions() ? Shortage.USER
                : total.bytes + bytes > node.bytes() || total.regions + 1 > node.regions() ? Shortage.NODE : Shortage.NONE;
        if (s == Shortage.NONE) {
            u.bytes += bytes;
            u.regions++;
            total.bytes += bytes;
            total.regions++;
        } else if (u.isEmpty()) {
            users.remove(user);
        }
        return s;
    }

    /** Whether more than half of the node's limits, or of {@code user}'s share, is registered. */
    synchronized boolean crowded(String user) {
        Usage u = users.get(user);
        return total.bytes > node.bytes() / 2 || total.regions > node.regions() / 2
                || (u != null && (u.bytes > perUser.bytes() / 2 || u.regions > perUser.regions() / 2));
    }

    synchronized void releaseRegion(String user, long bytes) {
        Usage u = users.get(user);
        if (u != null) {
            u.bytes -= bytes;
            u.regions--;
            total.bytes -= bytes;
            total.regions--;
            if (u.isEmpty()) {
                users.remove(user);
            }
        }
    }

    /**
     * Takes {@code bytes} for a tenant's send and receive pools (registered, pinned unless on demand,
     * for as long as the tenant lives) for {@code user} if they fit its limit and the node's; else says
     * which is short. Bytes only: the pools are no file mapping.
     */
    synchronized Shortage tryReservePools(String user, long bytes) {
        Usage u = users.computeIfAbsent(user, k -> new Usage());
        Shortage s = u.bytes + bytes > perUser.bytes() ? Shortage.USER
                : total.bytes + bytes > node.bytes() ? Shortage.NODE : Shortage.NONE;
        if (s == Shortage.NONE) {
            u.bytes += bytes;
            total.bytes += bytes;
            poolBytes += bytes;
        } else if (u.isEmpty()) {
            users.remove(user);
        }
        return s;
    }

    /** Gives back what {@link #tryReservePools} took, to the user it was taken for. */
    synchronized void releasePools(String user, long bytes) {
        Usage u = users.get(user);
        if (u != null) {
            u.bytes -= bytes;
            total.bytes -= bytes;
            poolBytes -= bytes;
            if (u.isEmpty()) {
                users.remove(user);
            }
        }
    }

    /** Bytes of tenants' send and receive pools counted now (in {@link #usedBytes}). */
    public synchronized long poolBytes() {
        return poolBytes;
    }

    /** Takes {@code bytes} of index heap for {@code user} if they fit its limit and the node's; else says which is short. */
    synchronized Shortage tryReserveIndex(String user, long bytes) {
        Usage u = users.computeIfAbsent(user, k -> new Usage());
        Shortage s = u.indexBytes + bytes > perUser.indexBytes() ? Shortage.USER
                : total.indexBytes + bytes > node.indexBytes() ? Shortage.NODE : Shortage.NONE;
        if (s == Shortage.NONE) {
            u.indexBytes += bytes;
            total.indexBytes += bytes;
        } else if (u.isEmpty()) {
            users.remove(user);
        }
        return s;
    }

    synchronized void releaseIndex(String user, long bytes) {
        Usage u = users.get(user);
        if (u != null) {
            u.indexBytes -= bytes;
            total.indexBytes -= bytes;
            if (u.isEmpty()) {
                users.remove(user);
            }
        }
    }

    void join(MapOutputRegistry r) {
        registries.add(r);
    }

    void leave(MapOutputRegistry r) {
        registries.remove(r);
    }

    /**
     * Deregisters idle regions of registries other than {@code forWhom} — of its user's other
     * applications if the user is short, of any application if the node is — largest holders first,
     * until a region of {@code bytes} fits or nothing idle is left; returns the bytes released. Call
     * with no registry's lock held.
     */
    long reclaimIdle(long bytes, Shortage shortage, MapOutputRegistry forWhom) {
        return reclaimIdle(bytes, 1, shortage, forWhom.user(), forWhom);
    }

    /** As {@link #reclaimIdle(long, Shortage, MapOutputRegistry)}, for room of {@code bytes} and {@code regions} of {@code user}. */
    long reclaimIdle(long bytes, int regions, Shortage shortage, String user, MapOutputRegistry forWhom) {
        long released = 0;
        for (MapOutputRegistry r : others(shortage, user, forWhom, MapOutputRegistry::registeredBytes)) {
            long missingBytes;
            int missingRegions;
            synchronized (this) {
                Usage u = shortage == Shortage.NODE ? total : users.getOrDefault(user, new Usage());
                RegistryLimits l = shortage == Shortage.NODE ? node : perUser;
                missingBytes = u.bytes + bytes - l.bytes();
                missingRegions = u.regions + regions - l.regions();
            }
            if (missingBytes <= 0 && missingRegions <= 0) {
                break;
            }
            released += r.releaseIdle(Math.max(0, missingBytes), Math.max(0, missingRegions));
        }
        return released;
    }

    /**
     * As {@link #reclaimIdle}, for index heap: forgets other registries' least recently used outputs
     * found on disk that have no region, largest holders first, until {@code bytes} fit.
     */
    long reclaimIdleIndexes(long bytes, Shortage shortage, MapOutputRegistry forWhom) {
        long freed = 0;
        for (MapOutputRegistry r : others(shortage, forWhom.user(), forWhom, MapOutputRegistry::indexBytes)) {
            long missing;
            synchronized (this) {
                missing = usage(shortage, forWhom).indexBytes + bytes
                        - (shortage == Shortage.NODE ? node : perUser).indexBytes();
            }
            if (missing <= 0) {
                break;
            }
            freed += r.releaseIdleIndexes(missing);
        }
        return freed;
    }

    /** Registries that may give {@code forWhom} room when {@code shortage} is short, the largest holders by {@code held} first. */
    private List<MapOutputRegistry> others(Shortage shortage, String user, MapOutputRegistry forWhom,
                                           java.util.function.ToLongFunction<MapOutputRegistry> held) {
        record Holder(MapOutputRegistry registry, long held) {
        }
        List<Holder> others = new ArrayList<>();
        for (MapOutputRegistry r : registries) {
            if (r != forWhom && (shortage == Shortage.NODE || r.user().equals(user))) {
                others.add(new Holder(r, held.applyAsLong(r))); // read once: the sort needs fixed keys
            }
        }
        others.sort(Comparator.comparingLong(Holder::held).reversed());
        return others.stream().map(Holder::registry).toList();
    }

    private Usage usage(Shortage shortage, MapOutputRegistry forWhom) {
        return shortage == Shortage.NODE ? total : users.getOrDefault(forWhom.user(), new Usage());
    }

    public synchronized long usedBytes() {
        return total.bytes;
    }

    public synchronized int usedRegions() {
        return total.regions;
    }

    public synchronized long usedIndexBytes() {
        return total.indexBytes;
    }

    /** Users holding anything now. */
    public synchronized int users() {
        return users.size();
    }

    public RegistryLimits nodeLimits() {
        return node;
    }

    public RegistryLimits userLimits() {
        return perUser;
    }
}
