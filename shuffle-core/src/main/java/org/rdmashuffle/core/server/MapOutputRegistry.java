package org.rdmashuffle.core.server;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;

import org.rdmashuffle.core.protocol.BlockDescriptor;
import org.rdmashuffle.core.protocol.MapOutputLayout;
import org.rdmashuffle.core.server.files.OutputFile;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.core.transport.MemoryRegistration;
import org.rdmashuffle.verbs.ProtectionDomain;

/**
 * The serving side's map outputs: each committed output (a data file and its partition offsets) is
 * registered as one memory region over the file mapping — no copy, any file size — when a reducer
 * first asks for it, and stays registered for later requests: regions are cached, never registered
 * per fetch.
 *
 * <p>Bounded in bytes, in number and in time ({@link RegistryLimits}): registered bytes (whole pages)
 * and regions under this registry's limits and, on a node serving many applications, under its
 * user's and the node's ({@link RegistryBudget}); when registering would exceed one, the least recently
 * described regions are released, except those described within the lease period or held by a
 * connection ({@link ConnectionHolds}: a reducer may be reading them), then other applications' idle ones.
 * Reducers that speak control protocol version 5 get held answers: an output they read is held until
 * they release it, not for a whole lease, and while more than half is registered ({@link #crowded}) no
 * layout (which keeps its output for a lease) goes to them, so outputs of any total size pass through a
 * smaller limit as fast as reducers read them. If nothing can be released the request fails
 * with {@link RegisteredMemoryExhaustedException} naming the numbers. The indexes of outputs found on
 * disk are a cache under an index-heap limit: the least recently used of those without a region are
 * forgotten (and found again if asked for). Slow work is waited for at most the lookup timeout.
 *
 * <p>Thread-safe, and the slow work runs outside its lock — a resolver's disk search (on the lookup
 * threads, {@link OutputSearches}), registering a file (ibv_reg_mr pins, and so reads, every page) —
 * so requests for registered outputs are answered while other outputs are found or registered. What
 * the completion poller asks ({@link #describeIfRegistered}) costs a constant per block, whatever the
 * size of the output's index.
 *
 * <p>Outputs belong to an application: an executor's engine serves its own ({@link #OWN}), a node's
 * shuffle service many, each reducer seeing only those of the application it authenticated for. A
 * {@link Resolver} finds outputs nobody registered (MapReduce's, on the node's disks) when first asked.
 *
 * <p>Its parts, all guarded by its lock (it is the monitor they take): the {@link OutputTable}; the
 * {@link RegisteredRegions} (the LRU of regions and what they count against the limits); the outputs
 * found on disk, {@link FoundOutputs}, with their {@link IndexCache}. This class is what joins them:
 * describing a block, registering a file outside the lock, forgetting, closing.
 */
public final class MapOutputRegistry implements AutoCloseable {
    /** The application of outputs registered without one: an engine serving its own process's outputs. */
    public static final String OWN = "";
    /** How often one request goes round finding an output that is released again before it is described. */
    private static final int MAX_ATTEMPTS = 8;

    /** Shared with the other applications' registries of a serving engine. */
    private final RegistryBudget budget;
    /** Whose share of the budget this registry draws on. */
    private final String user;
    private final long lookupTimeoutNanos;
    private final LongSupplier clock;
    /** Outputs by application and shuffle, then map id. Guarded by this. */
    private final OutputTable table = new OutputTable();
    /** Its regions: the LRU, what they count against the limits, those to close. Guarded by this. */
    private final RegisteredRegions regions;
    /** The indexes of outputs found on disk: their heap, and which may be forgotten. Guarded by this. */
    private final IndexCache indexes;
    /** Outputs nobody registered: searched for, added, forgotten. */
    private final FoundOutputs found;
    /** Registrations of files, run outside the lock; {@link #close} waits for them. */
    private final FileRegistrations registrations;
    /** Registered on demand: faults in each block a reducer is told about before it reads (null when pinned). */
    private final Prefetcher prefetcher;
    /** Reducers read through memory windows over its regions (null: under the regions' own keys); set once, before any registration. */
    private volatile ServingWindows windows;
    /** Completed (and replaced) when a connection gives back what it held: requests waiting for room look again. */
    private CompletableFuture<Void> nextRelease = new CompletableFuture<>();
    private boolean closed;
    /** Blocks described since the start: what requests cost (tests). Guarded by this. */
    private long descriptions;

    /**
     * Finds map outputs that were not registered: asked on the first request for one, outside the
     * registry's lock, on a lookup thread, possibly for several outputs at once.
     */
    public interface Resolver {
        /** The output, or null if the application has none by that id. */
        ResolvedOutput resolve(String app, int shuffleId, long mapId) throws IOException;
    }

    /**
     * A map output found on disk: {@code offsets} as for {@link #register}, and {@code rawLengths} the
     * size of each partition once decompressed (null where the format does not record it).
     */
    public record ResolvedOutput(OutputFile dataFile, long[] offsets, long[] rawLengths) {
    }

    /** A registered output's layout and the bytes it takes in a message. */
    public record SizedLayout(MapOutputLayout layout, int bytes) {
    }

    /**
     * @param limitBytes most bytes registered at once
     * @param leaseMillis how long a described region is kept registered for the reads that follow
     */
    public MapOutputRegistry(ProtectionDomain pd, long limitBytes, long leaseMillis) {
        this(pd, limitBytes, leaseMillis, new RegistryBudget(limitBytes), System::nanoTime);
    }

    MapOutputRegistry(ProtectionDomain pd, long limitBytes, long leaseMillis, LongSupplier clock) {
        this(pd, limitBytes, leaseMillis, new RegistryBudget(limitBytes), clock);
    }

    MapOutputRegistry(ProtectionDomain pd, long limitBytes, long leaseMillis, RegistryBudget budget, LongSupplier clock) {
        this(pd, RegistryLimits.ofBytes(limitBytes), budget, OWN, leaseMillis, 60_000, OutputSearches.Lookups.INLINE, clock);
    }

    /**
     * A registry of one application of a serving engine.
     *
     * @param limits this application's limits
     * @param budget the node's, shared with the other applications' registries
     * @param user the application's user, whose share of the budget it draws on
     * @param lookupTimeoutMillis how long a request waits for slow work: a search on disk, another request's registration
     * @param lookups where searches on disk run
     */
    public MapOutputRegistry(ProtectionDomain pd, RegistryLimits limits, RegistryBudget budget, String user, long leaseMillis,
                             long lookupTimeoutMillis, OutputSearches.Lookups lookups) {
        this(pd, MemoryRegistration.PINNED, limits, budget, user, leaseMillis, lookupTimeoutMillis, lookups);
    }

    /** As above, its files registered as {@code registration} says (pinned or on demand). */
    public MapOutputRegistry(ProtectionDomain pd, MemoryRegistration registration, RegistryLimits limits, RegistryBudget budget,
                             String user, long leaseMillis, long lookupTimeoutMillis, OutputSearches.Lookups lookups) {
        this(pd, registration, limits, budget, user, leaseMillis, lookupTimeoutMillis, lookups, System::nanoTime);
    }

    MapOutputRegistry(ProtectionDomain pd, RegistryLimits limits, RegistryBudget budget, String user, long leaseMillis,
                      long lookupTimeoutMillis, OutputSearches.Lookups lookups, LongSupplier clock) {
        this(pd, MemoryRegistration.PINNED, limits, budget, user, leaseMillis, lookupTimeoutMillis, lookups, clock);
    }

    MapOutputRegistry(ProtectionDomain pd, MemoryRegistration registration, RegistryLimits limits, RegistryBudget budget,
                      String user, long leaseMillis, long lookupTimeoutMillis, OutputSearches.Lookups lookups, LongSupplier clock) {
        this.budget = budget;
        this.user = user;
        this.lookupTimeoutNanos = lookupTimeoutMillis * 1_000_000L;
        this.clock = clock;
        this.indexes = new IndexCache(limits, budget, user);
        org.rdmashuffle.core.metrics.RegistrationCounts counts = new org.rdmashuffle.core.metrics.RegistrationCounts();
        this.regions = new RegisteredRegions(limits, budget, user, leaseMillis * 1_000_000L, clock, indexes, counts);
        this.registrations = new FileRegistrations(this, pd, registration, regions, indexes, counts);
        this.prefetcher = registration.onDemand() ? new Prefetcher(pd) : null;
        this.found = new FoundOutputs(this, table, indexes, budget, new OutputSearches(lookups), lookupTimeoutNanos);
        budget.join(this);
    }

    String user() {
        return user;
    }

    /**
     * Records a committed map output. {@code offsets} are the partition boundaries as Spark's index
     * file holds them: {@code numPartitions + 1} non-decreasing values from 0 to the data file's size.
     */
    public void register(int shuffleId, long mapId, Path dataFile, long[] offsets) {
        register(OWN, shuffleId, mapId, dataFile, offsets);
    }

    /** Records a committed map output of application {@code app}, in a file this process trusts (it names it). */
    public void register(String app, int shuffleId, long mapId, Path dataFile, long[] offsets) {
        MapOutput out = MapOutput.named(app, shuffleId, mapId, dataFile, offsets);
        synchronized (this) {
            ensureOpen();
            enter(out);
        }
        closeDeregistered(); // the region of an output this one replaced
    }

    /** Sets who finds outputs that were not registered (null: nobody, an unknown output is an error). */
    public void resolver(Resolver r) {
        found.resolver(r);
    }

    /** Under the lock: enters {@code out}, releasing an output it replaces (a re-attempt). */
    void enter(MapOutput out) {
        MapOutput previous = table.put(out);
        if (previous != null) {
            release(previous);
        }
        if (out.resolved) {
            indexes.idle(out);
        }
    }

    /** The block holding partitions {@code [start, end)} of a map output, registering its file if needed. */
    public BlockDescriptor describe(int shuffleId, long mapId, int start, int end) {
        return describe(OWN, shuffleId, mapId, start, end);
    }

    /**
     * As {@link #describe(int, long, int, int)}, for an output of application {@code app}. The slow
     * parts run outside the registry's lock, so they do not hold up requests for outputs already
     * registered: finding an output nobody registered (the resolver's disk search) and registering
     * its file (which pins, and so reads, every page of it). Requests for an output whose file is
     * being registered wait for that one registration, at most the lookup timeout.
     */
    public BlockDescriptor describe(String app, int shuffleId, long mapId, int start, int end) {
        return describe(app, shuffleId, mapId, start, end, null);
    }

    /** As above, for an answer that holds what it describes for its connection ({@code held}; null: a lease). */
    public BlockDescriptor describe(String app, int shuffleId, long mapId, int start, int end, HeldAnswer held) {
        try {
            return describeOrRegister(app, shuffleId, mapId, start, end, held);
        } finally {
            closeDeregistered(); // regions this call released to make room, closed outside the lock
        }
    }

    private BlockDescriptor describeOrRegister(String app, int shuffleId, long mapId, int start, int end, HeldAnswer held) {
        boolean reclaimed = false;
        for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
            MapOutput out = output(app, shuffleId, mapId);
            CompletableFuture<Void> registration = null;
            RegistryBudget.Shortage shortage = RegistryBudget.Shortage.NONE;
            boolean mine = false;
            synchronized (this) {
                ensureOpen();
                if (out.released) {
                    continue; // replaced or forgotten meanwhile: look again
                }
                BlockDescriptor d = describe(out, start, end, held);
                if (d != null) {
                    return d;
                }
                if (out.registration == null) {
                    shortage = regions.reserve(out, reclaimed); // kept while the file is registered outside the lock
                    if (shortage == RegistryBudget.Shortage.NONE) {
                        registration = registrations.start(out);
                        mine = true;
                    }
                } else {
                    registration = out.registration;
                }
            }
            if (registration == null) {
                closeDeregistered();
                budget.reclaimIdle(out.pinnedBytes(), shortage, this); // outside our lock: it takes theirs
                reclaimed = true;
            } else if (mine) {
                registrations.run(out, registration);
            } else {
                SlowWork.await(registration, lookupTimeoutNanos, "the registration of " + out);
            }
        }
        throw new RegisteredMemoryExhaustedException("map output " + mapId + " of shuffle " + shuffleId + " was released "
                + MAX_ATTEMPTS + " times before it could be described: registered memory is too short to keep it");
    }

    /**
     * Reducers read through {@code w}'s windows from now on: regions are registered bindable
     * ({@code MW_BIND}), described under a window's key ({@link #describeIfRegistered(String, int,
     * long, int, int, ServingWindows.Keys)}), and their windows go before they are deregistered. Called
     * once, before any output is registered.
     */
    public void readThroughWindows(ServingWindows w) {
        synchronized (this) {
            if (registrations.completed() > 0 || regions.registered() > 0) {
                throw new IllegalStateException("windows must be set before any output is registered");
            }
        }
        windows = w;
    }

    /** What regions are registered with besides remote read: MW_BIND when reducers read through windows. */
    int windowAccess() {
        return windows == null ? 0 : org.rdmashuffle.verbs.Access.MW_BIND;
    }

    /**
     * As {@link #describeIfRegistered(String, int, long, int, int)}, readable under {@code keys}' window
     * over the output's region (the region's own key if {@code keys} is null); null also when the
     * application has no bind slot free for a new window (the caller waits for {@code keys.room()}).
     */
    public synchronized BlockDescriptor describeIfRegistered(String app, int shuffleId, long mapId, int start, int end,
                                                             ServingWindows.Keys keys) {
        return describeIfRegistered(app, shuffleId, mapId, start, end, keys, null);
    }

    /** As above, for an answer that holds what it describes for its connection ({@code held}; null: a lease). */
    public synchronized BlockDescriptor describeIfRegistered(String app, int shuffleId, long mapId, int start, int end,
                                                             ServingWindows.Keys keys, HeldAnswer held) {
        ensureOpen();
        // One lookup per block: without a resolver an unknown output is an error, with one it is slow work.
        MapOutput out = found.hasResolver() ? table.get(app, shuffleId, mapId) : table.required(app, shuffleId, mapId);
        BlockDescriptor d = out == null ? null : describe(out, start, end, held);
        if (keys == null || d == null || d.length() == 0) {
            return d;
        }
        long key = keys.keyFor(out.region); // under the lock: the region stays registered
        return key < 0 ? null : out.describe(start, end, (int) key);
    }

    /**
     * As {@link #describe(String, int, long, int, int)} when that needs no slow work; null when it
     * would have to find the output on disk or register its file. For the completion poller, which
     * answers what it can at once and hands the rest to threads that may block: constant work per block.
     */
    public synchronized BlockDescriptor describeIfRegistered(String app, int shuffleId, long mapId, int start, int end) {
        return describeIfRegistered(app, shuffleId, mapId, start, end, null);
    }

    /**
     * The output, known or found by the resolver (on a lookup thread, waited for at most the lookup
     * timeout); NoSuchMapOutputException if neither. Requests for the same unknown output share one search.
     */
    private MapOutput output(String app, int shuffleId, long mapId) {
        synchronized (this) {
            ensureOpen();
            MapOutput out = found.hasResolver() ? table.get(app, shuffleId, mapId) : table.required(app, shuffleId, mapId);
            if (out != null) {
                return out;
            }
        }
        return found.find(app, shuffleId, mapId);
    }

    /**
     * The slow work under way for an output, for a request that waits for it without holding a thread:
     * the search for it (started now if the output is unknown; completes with the output, or null if
     * there is none), or another request's registration of its file (completes with the output). Null
     * if none is needed or under way: the caller may describe it, registering the file itself.
     */
    CompletableFuture<MapOutput> pendingWork(String app, int shuffleId, long mapId) {
        synchronized (this) {
            ensureOpen();
            MapOutput out = table.get(app, shuffleId, mapId);
            if (out != null) {
                return out.registration == null ? null : out.registration.thenApply(v -> out);
            }
        }
        return found.search(app, shuffleId, mapId); // null without a resolver
    }

    /** Blocks described since the start (a block described again, or for its window's key, counts again). */
    public synchronized long descriptions() {
        return descriptions;
    }

    /** How long a request waits for slow work before it is refused. */
    public long lookupTimeoutNanos() {
        return lookupTimeoutNanos;
    }

    /**
     * Whether more than half of what this registry may register, or of its user's or the node's budget,
     * is registered: a held answer then carries no layouts (each would keep its output for a lease).
     */
    public synchronized boolean crowded() {
        return !closed && regions.crowded();
    }

    /**
     * A reducer on connection {@code holds} (of application {@code app}) is done with these outputs'
     * held answers. Constant work per output named; outputs it does not hold, or of which it releases
     * more answers than it holds, cost nothing more.
     */
    public void release(ConnectionHolds holds, String app, java.util.List<org.rdmashuffle.core.protocol.Message.Released> outputs) {
        givingBack(() -> {
            if (closed) {
                return;
            }
            for (org.rdmashuffle.core.protocol.Message.Released r : outputs) {
                MapOutput out = table.get(app, r.shuffleId(), r.mapId());
                if (out != null) {
                    holds.release(out, r.answers());
                }
            }
        });
    }

    /** An answer that held outputs was not sent as a held answer (a refusal, "busy", its connection gone): its holds go. */
    public void giveBack(HeldAnswer held) {
        givingBack(() -> {
            for (MapOutput out : held.outputs) {
                held.connection.release(out, 1);
            }
            held.outputs.clear();
        });
    }

    /** Connection {@code holds} is retired: whatever it held is given back, and it holds nothing more. */
    public void drop(ConnectionHolds holds) {
        givingBack(holds::dropAll);
    }

    /**
     * Runs {@code underLock}, which gives holds back, under the lock, then, outside it, wakes the
     * requests waiting for room: each queues its next turn.
     */
    private void givingBack(Runnable underLock) {
        CompletableFuture<Void> released;
        synchronized (this) {
            underLock.run();
            released = nextRelease;
            nextRelease = new CompletableFuture<>();
        }
        released.complete(null);
    }

    /** What completes at the next release of held outputs (for a request waiting for registered memory). */
    synchronized CompletableFuture<Void> nextRelease() {
        return nextRelease;
    }

    /** For the budget, when another application needs index heap: see {@link FoundOutputs#releaseIdle}. */
    long releaseIdleIndexes(long bytes) {
        return found.releaseIdle(bytes);
    }

    /**
     * The block of partitions {@code [start, end)} of {@code out}; null if its file is not registered.
     * Its region is kept for a lease from now, or, for a held answer, held for its connection. Under the lock.
     */
    private BlockDescriptor describe(MapOutput out, int start, int end, HeldAnswer held) {
        descriptions++;
        BlockDescriptor d = out.describe(start, end);
        if (d != null && d.length() == 0) {
            indexes.touch(out); // an output whose blocks are asked for stays in the cache
        } else if (d != null) {
            regions.touch(out);
            if (held == null) {
                out.describedAt = clock.getAsLong();
            } else if (held.outputs.add(out)) {
                held.connection.hold(out, clock.getAsLong());
            }
            if (prefetcher != null) {
                prefetcher.prefetch(out.region, d.address() - out.region.address(), d.length()); // registered: under the lock
            }
        }
        return d;
    }

    /**
     * The whole layout of a registered output whose raw partition sizes are not recorded apart
     * (Spark's), if it takes at most {@code maxBytes} in a message, for a reducer that just had a block
     * of it described (so within that block's lease), readable under {@code keys}' window over its
     * region (null: the region's own key); null otherwise. Constant work: the size was computed when
     * the output was added.
     */
    public synchronized SizedLayout layoutIfRegistered(String app, int shuffleId, long mapId, int maxBytes,
                                                       ServingWindows.Keys keys) {
        if (closed) {
            return null;
        }
        MapOutput out = table.get(app, shuffleId, mapId);
        if (out == null || out.region == null || out.index.recordsRawLengths() || out.released
                || out.index.layoutBytes() > maxBytes) {
            return null;
        }
        long key;
        try {
            key = keys == null ? Integer.toUnsignedLong(out.region.rkey()) : keys.keyFor(out.region);
        } catch (ServerBusyRefusal | IllegalStateException e) {
            return null; // a layout is an extra: the answer goes without it
        }
        if (key < 0) {
            return null;
        }
        out.describedAt = clock.getAsLong(); // the reducer reads through it for half a lease: kept for one
        return new SizedLayout(out.layout((int) key), out.index.layoutBytes());
    }

    /** Tests: {@code hook} runs on the registering thread before each registration, as a slow ibv_reg_mr would take time. */
    public void beforeRegistering(Runnable hook) {
        registrations.beforeRegistering(hook);
    }

    /**
     * Deregisters this registry's least recently described regions outside their lease until {@code
     * bytes} and {@code count} regions are released or none is left; returns the bytes released. For
     * the budget, when another application needs room.
     */
    long releaseIdle(long bytes, int count) {
        long released;
        synchronized (this) {
            if (closed) {
                return 0;
            }
            released = regions.release(bytes, count);
        }
        closeDeregistered();
        return released;
    }

    /** Closes the regions deregistered so far, outside the lock: closing waits for transfers still using them. */
    private void closeDeregistered() {
        List<MemoryRegion> now;
        synchronized (this) {
            now = regions.takeToClose();
        }
        ServingWindows w = windows;
        // One region that fails to deregister does not keep the others registered: the first failure is thrown after all.
        org.rdmashuffle.core.transport.CloseSteps steps = new org.rdmashuffle.core.transport.CloseSteps();
        for (MemoryRegion r : now) {
            if (w != null) {
                steps.attempt(() -> w.regionClosing(r)); // a region with a window bound to it cannot be deregistered (rxe: EINVAL)
            }
            steps.attempt(r::close);
        }
        steps.rethrow();
    }

    /** Under the lock: forgets {@code out}: deregisters its region (or has a registration under way give it back), frees its index. */
    void release(MapOutput out) {
        if (out.released) {
            return;
        }
        out.released = true;
        regions.forget(out);
        if (out.resolved) {
            indexes.release(out);
        }
    }

    /** Forgets a shuffle: deregisters its regions (the files belong to the engine that wrote them). */
    public void unregisterShuffle(int shuffleId) {
        unregisterShuffle(OWN, shuffleId);
    }

    public void unregisterShuffle(String app, int shuffleId) {
        synchronized (this) {
            table.removeShuffle(app, shuffleId).forEach(this::release);
        }
        closeDeregistered();
    }

    /** Forgets every output of an application and deregisters their regions; returns how many there were. */
    public int unregisterApplication(String app) {
        Collection<MapOutput> removed;
        synchronized (this) {
            removed = table.removeApplication(app);
            removed.forEach(this::release);
        }
        closeDeregistered();
        return removed.size();
    }

    /** Bytes (whole pages) registered with the device now, or reserved by registrations under way. */
    public synchronized long registeredBytes() {
        return regions.bytes();
    }

    /** Regions registered now. */
    public synchronized int registeredRegions() {
        return regions.registered();
    }

    /** Heap held by the indexes of outputs found on disk. */
    public synchronized long indexBytes() {
        return indexes.bytes();
    }

    /** Registrations made since creation: equals the number of distinct outputs described unless regions were released. */
    public synchronized long registrations() {
        return registrations.completed();
    }

    /**
     * Files registered and failed to register, their bytes and time, and regions evicted to make room,
     * since creation (no lock: counters).
     */
    public org.rdmashuffle.core.metrics.RegistrationCounts.Snapshot registrationCounts() {
        return registrations.counts();
    }

    /** Map outputs known, registered or not. */
    public synchronized int mapOutputs() {
        return table.size();
    }

    /** Under the lock. */
    boolean isClosed() {
        return closed;
    }

    /** Under the lock. */
    void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("map output registry is closed");
        }
    }

    /**
     * Deregisters every region. Returns at once; the future completes when no registration is under
     * way any more (ibv_reg_mr cannot be interrupted: each closes its region on seeing the registry
     * closed), after which the protection domain may go.
     */
    public CompletableFuture<Void> closeAsync() {
        CompletableFuture<Void> underWay;
        synchronized (this) {
            if (!closed) {
                closed = true;
                budget.leave(this);
                table.removeAll().forEach(this::release);
            }
            underWay = registrations.allUnderWay();
        }
        closeDeregistered();
        return underWay;
    }

    /** Deregisters every region, after waiting for registrations under way. */
    @Override
    public void close() {
        closeAsync().join();
    }
}
