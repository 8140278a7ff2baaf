package org.rdmashuffle.core.server;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * Finds outputs nobody registered, for one {@link MapOutputRegistry}: one search per output at a time
 * (at a stage's start every reducer asks for every map output at once, and they share it), run on the
 * engine's lookup threads, never on a server thread or a poller. What a search finds is added to the
 * registry by the lookup thread itself, so a request waiting for it (without holding a thread:
 * {@link FetchRequestHandler}) finds the output known when it comes back. A search that does not
 * finish (a disk that hangs) keeps its lookup thread only. Thread-safe.
 */
public final class OutputSearches {
    /** Where searches run: a bounded queue of lookup threads; false when it refuses (this application has enough waiting). */
    @FunctionalInterface
    public interface Lookups {
        boolean submit(Runnable search);

        /** Searches run on the caller's thread: an executor's engine, and tests. */
        Lookups INLINE = search -> {
            search.run();
            return true;
        };
    }

    record Key(String app, int shuffleId, long mapId) {
    }

    private final Lookups lookups;
    private volatile MapOutputRegistry.Resolver resolver;
    /** Guarded by this. */
    private final Map<Key, CompletableFuture<MapOutput>> underWay = new HashMap<>();

    OutputSearches(Lookups lookups) {
        this.lookups = lookups;
    }

    void resolver(MapOutputRegistry.Resolver r) {
        resolver = r;
    }

    boolean hasResolver() {
        return resolver != null;
    }

    /**
     * The search for an output, started now unless one is under way: it completes with the output
     * {@code add} made of what the resolver found (null: the application has none by that id), or
     * with the resolver's failure (an {@link UncheckedIOException} for an I/O error), or {@link
     * ServerBusyRefusal} when the application has too many searches waiting. Null without a resolver.
     */
    CompletableFuture<MapOutput> search(String app, int shuffleId, long mapId,
                                        Function<MapOutputRegistry.ResolvedOutput, MapOutput> add) {
        MapOutputRegistry.Resolver r = resolver;
        if (r == null) {
            return null;
        }
        Key key = new Key(app, shuffleId, mapId);
        CompletableFuture<MapOutput> search;
        synchronized (this) {
            search = underWay.get(key);
            if (search != null) {
                return search;
            }
            search = new CompletableFuture<>();
            underWay.put(key, search);
        }
        CompletableFuture<MapOutput> s = search;
        boolean queued;
        try {
            queued = lookups.submit(() -> run(r, key, s, add));
        } catch (RuntimeException e) {
            queued = false;
        }
        if (!queued) {
            forget(key, s);
            s.completeExceptionally(new ServerBusyRefusal("map output " + mapId + " of shuffle " + shuffleId
                    + ": too many lookups of this application waiting"));
        }
        return s;
    }

    private void run(MapOutputRegistry.Resolver r, Key key, CompletableFuture<MapOutput> search,
                     Function<MapOutputRegistry.ResolvedOutput, MapOutput> add) {
        try {
            MapOutputRegistry.ResolvedOutput found = r.resolve(key.app(), key.shuffleId(), key.mapId());
            search.complete(found == null ? null : add.apply(found));
        } catch (IOException e) {
            search.completeExceptionally(new UncheckedIOException("map output " + key.mapId() + " of shuffle "
                    + key.shuffleId() + ": " + e.getMessage(), e));
        } catch (RuntimeException | Error e) {
            search.completeExceptionally(e);
        } finally {
            forget(key, search);
        }
    }

    private synchronized void forget(Key key, CompletableFuture<MapOutput> search) {
        underWay.remove(key, search);
    }
}
