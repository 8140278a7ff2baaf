package org.rdmashuffle.core.server;

import java.util.concurrent.CompletableFuture;

/**
 * The outputs of one {@link MapOutputRegistry} that nobody registered but its resolver finds on disk
 * (MapReduce's; a Spark application's on a node's shuffle service): finding them, one search per
 * output at a time on the lookup threads ({@link OutputSearches}); adding what was found, its index
 * counted against the index-heap limits ({@link IndexCache}); and forgetting the least recently used
 * of those without a region when another index needs the room (they are found again if asked for).
 *
 * <p>Shares the registry's lock: the table and the index cache are guarded by it, and every method
 * here that touches them takes it (the registry is the monitor). Searches run, and are waited for,
 * outside it.
 */
final class FoundOutputs {
    private final MapOutputRegistry registry;
    private final OutputTable table;
    private final IndexCache indexes;
    private final RegistryBudget budget;
    private final OutputSearches searches;
    private final long lookupTimeoutNanos;

    FoundOutputs(MapOutputRegistry registry, OutputTable table, IndexCache indexes, RegistryBudget budget,
                 OutputSearches searches, long lookupTimeoutNanos) {
        this.registry = registry;
        this.table = table;
        this.indexes = indexes;
        this.budget = budget;
        this.searches = searches;
        this.lookupTimeoutNanos = lookupTimeoutNanos;
    }

    void resolver(MapOutputRegistry.Resolver r) {
        searches.resolver(r);
    }

    boolean hasResolver() {
        return searches.hasResolver();
    }

    /**
     * The search for an output the table does not hold, started now unless one is under way; it
     * completes with the output (null if the application has none by that id). Null without a resolver.
     */
    CompletableFuture<MapOutput> search(String app, int shuffleId, long mapId) {
        return searches.search(app, shuffleId, mapId, found -> add(app, shuffleId, mapId, found));
    }

    /**
     * An output the table did not hold, found by the resolver (waited for at most the lookup timeout,
     * outside the lock); NoSuchMapOutputException if there is none. Requests for it share one search.
     */
    MapOutput find(String app, int shuffleId, long mapId) {
        CompletableFuture<MapOutput> search = search(app, shuffleId, mapId);
        MapOutput found = search == null ? null
                : SlowWork.await(search, lookupTimeoutNanos, "the lookup of map output " + mapId + " of shuffle " + shuffleId);
        if (found != null) {
            return found;
        }
        synchronized (registry) {
            return table.required(app, shuffleId, mapId); // registered meanwhile, or none
        }
    }

    /**
     * Adds what the resolver found (on the lookup thread that found it), its index counted against the
     * index-heap limits; the output another request added meanwhile, if any.
     */
    private MapOutput add(String app, int shuffleId, long mapId, MapOutputRegistry.ResolvedOutput found) {
        String what = "map output " + mapId + " of shuffle " + shuffleId + " (" + found.dataFile() + ")";
        MapOutput candidate = new MapOutput(app, shuffleId, mapId, found.dataFile(),
                OutputIndex.of(shuffleId, mapId, found.offsets(), found.rawLengths(), what), true);
        long heap = candidate.index.heapBytes();
        for (boolean lastTry = false; ; lastTry = true) {
            RegistryBudget.Shortage shortage;
            synchronized (registry) {
                registry.ensureOpen();
                MapOutput out = table.get(app, shuffleId, mapId);
                if (out != null) {
                    return out;
                }
                shortage = indexes.reserve(heap, candidate, lastTry, this::forget);
                if (shortage == RegistryBudget.Shortage.NONE) {
                    registry.enter(candidate);
                    return candidate;
                }
            }
            budget.reclaimIdleIndexes(heap, shortage, registry); // outside our lock: it takes theirs
        }
    }

    /**
     * Forgets the least recently used idle indexes until {@code bytes} of index heap are freed or none
     * is left; returns the bytes freed. For the budget, when another application needs room.
     */
    long releaseIdle(long bytes) {
        long freed = 0;
        synchronized (registry) {
            while (!registry.isClosed() && freed < bytes && indexes.hasIdle()) {
                long before = indexes.bytes();
                indexes.forgetOne(this::forget);
                freed += before - indexes.bytes();
            }
        }
        return freed;
    }

    /** Under the lock: takes an output found on disk with no region out of the table; found again if asked for. */
    private void forget(MapOutput victim) {
        table.remove(victim);
        registry.release(victim);
    }
}
