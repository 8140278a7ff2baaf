package org.rdmashuffle.core.server;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.LongSupplier;

import org.rdmashuffle.core.server.files.OutputFile;
import org.rdmashuffle.core.server.files.RefusedFileException;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.ProtectionDomain;

/**
 * The serving side's map outputs: each committed output (a data file and its partition offsets) is
 * registered as one memory region over the file mapping — no copy, any file size — when a reducer
 * first asks for it, and stays registered for later requests: regions are cached, never registered
 * per fetch.
 *
 * <p>Registered memory is bounded: when registering would exceed the limit, the least recently
 * described regions are released, except those described within the lease period (a reducer may be
 * reading them right now). On a node serving many applications each registry's limit is one
 * application's share, and all draw from one {@link RegisteredMemoryBudget}: when that is spent, other
 * applications' idle regions are released too. If nothing can be released the request fails with
 * {@link RegisteredMemoryExhaustedException} naming the numbers.
 *
 * <p>Thread-safe, and the slow work runs outside its lock — a resolver's disk search, registering a
 * file (ibv_reg_mr pins, and so reads, every page) — so requests for registered outputs are answered
 * while other outputs are found or registered.
 *
 * <p>Outputs belong to an application: an executor's engine serves its own ({@link #OWN}), a node's
 * shuffle service many, each reducer seeing only those of the application it authenticated for. A
 * {@link Resolver} finds outputs nobody registered (MapReduce's, on the node's disks) when first asked.
 */
public final class MapOutputRegistry implements AutoCloseable {
    private final ProtectionDomain pd;
    private final long limitBytes;
    /** Shared with the other applications' registries of a serving engine. */
    private final RegisteredMemoryBudget budget;
    private final long leaseNanos;
    private final LongSupplier clock;
    /** Outputs by application and shuffle, then map id. */
    private final Map<ShuffleKey, Map<Long, MapOutput>> outputs = new HashMap<>();
    private Resolver resolver;
    /** Regions deregistered under the lock, to be closed outside it. */
    private final List<MemoryRegion> toClose = new ArrayList<>();
    /** Registered outputs in least-recently-described order. */
    private final LinkedHashMap<MapOutput, Boolean> registered = new LinkedHashMap<>(16, 0.75f, true);
    private long registeredBytes;
    /** Registrations running outside the lock; {@link #close} waits for them. */
    private final Set<CompletableFuture<Void>> registrationsUnderWay = new java.util.HashSet<>();
    /** Resolver searches under way, so concurrent requests for one unknown output share one. */
    private final Map<OutputKey, CompletableFuture<MapOutput>> searches = new HashMap<>();
    private long registrations;
    private boolean closed;

    /** The application of outputs registered without one: an engine serving its own process's outputs. */
    public static final String OWN = "";

    private record ShuffleKey(String app, int shuffleId) {
    }

    private record OutputKey(String app, int shuffleId, long mapId) {
    }

    /**
     * Finds map outputs that were not registered: asked on the first request for one, outside the
     * registry's lock and possibly from several threads at once.
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

    /** One committed map output: its file, its partition offsets, and its region while registered. */
    private static final class MapOutput {
        final int shuffleId;
        final long mapId;
        final OutputFile dataFile;
        final long[] offsets;
        final long[] rawLengths;
        MemoryRegion region;
        /** Set while a thread registers the file outside the lock; others wait on it. */
        CompletableFuture<Void> registration;
        /** Replaced by a re-attempt, or its shuffle or application forgotten. */
        boolean released;
        long describedAt;

        MapOutput(int shuffleId, long mapId, OutputFile dataFile, long[] offsets, long[] rawLengths) {
            this.shuffleId = shuffleId;
            this.mapId = mapId;
            this.dataFile = dataFile;
            this.offsets = offsets;
            this.rawLengths = rawLengths;
        }

        long size() {
            return offsets[offsets.length - 1];
        }
    }

    /**
     * @param limitBytes most bytes registered at once
     * @param leaseMillis how long a described region is kept registered for the reads that follow
     */
    public MapOutputRegistry(ProtectionDomain pd, long limitBytes, long leaseMillis) {
        this(pd, limitBytes, leaseMillis, new RegisteredMemoryBudget(limitBytes), System::nanoTime);
    }

    /** @param budget the node-wide bytes this registry draws from, with other applications' registries */
    public MapOutputRegistry(ProtectionDomain pd, long limitBytes, long leaseMillis, RegisteredMemoryBudget budget) {
        this(pd, limitBytes, leaseMillis, budget, System::nanoTime);
    }

    MapOutputRegistry(ProtectionDomain pd, long limitBytes, long leaseMillis, LongSupplier clock) {
        this(pd, limitBytes, leaseMillis, new RegisteredMemoryBudget(limitBytes), clock);
    }

    MapOutputRegistry(ProtectionDomain pd, long limitBytes, long leaseMillis, RegisteredMemoryBudget budget,
                      LongSupplier clock) {
        if (limitBytes <= 0) {
            throw new IllegalArgumentException("registered-memory limit must be positive: " + limitBytes);
        }
        this.pd = pd;
        this.limitBytes = limitBytes;
        this.budget = budget;
        this.leaseNanos = leaseMillis * 1_000_000L;
        this.clock = clock;
        budget.join(this);
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
        long size;
        try {
            size = java.nio.file.Files.size(dataFile);
        } catch (IOException e) {
            throw new UncheckedIOException("map output " + mapId + " of shuffle " + shuffleId + " (" + dataFile
                    + "): cannot read the data file", e);
        }
        if (offsets.length > 0 && size != offsets[offsets.length - 1]) {
            throw new IllegalArgumentException("map output " + mapId + " of shuffle " + shuffleId + " (" + dataFile
                    + "): the index ends at " + offsets[offsets.length - 1] + " but the data file has " + size + " bytes");
        }
        synchronized (this) {
            ensureOpen();
            add(app, shuffleId, mapId, new ResolvedOutput(OutputFile.trusted(dataFile), offsets, null));
        }
        closeDeregistered(); // the region of an output this one replaced
    }

    /** Sets who finds outputs that were not registered (null: nobody, an unknown output is an error). */
    public synchronized void resolver(Resolver r) {
        this.resolver = r;
    }

    /** Under the lock; the data file's size was checked by whoever found it, and is again when it is registered. */
    private MapOutput add(String app, int shuffleId, long mapId, ResolvedOutput found) {
        OutputFile dataFile = found.dataFile();
        long[] offsets = found.offsets();
        String what = "map output " + mapId + " of shuffle " + shuffleId + " (" + dataFile + ")";
        if (found.rawLengths() != null && found.rawLengths().length != offsets.length - 1) {
            throw new IllegalArgumentException(what + ": " + found.rawLengths().length + " raw lengths for "
                    + (offsets.length - 1) + " partitions");
        }
        if (offsets.length < 2 || offsets[0] != 0) {
            throw new IllegalArgumentException(what + ": offsets must start at 0 and bound at least one partition");
        }
        for (int i = 1; i < offsets.length; i++) {
            if (offsets[i] < offsets[i - 1]) {
                throw new IllegalArgumentException(what + ": offset of partition " + i + " (" + offsets[i]
                        + ") is below that of partition " + (i - 1) + " (" + offsets[i - 1] + ")");
            }
        }
        MapOutput out = new MapOutput(shuffleId, mapId, dataFile, offsets.clone(),
                found.rawLengths() == null ? null : found.rawLengths().clone());
        MapOutput previous = outputs.computeIfAbsent(new ShuffleKey(app, shuffleId), s -> new HashMap<>()).put(mapId, out);
        if (previous != null) {
            release(previous); // a re-attempt replaced it
        }
        return out;
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
     * being registered wait for that one registration.
     */
    public BlockDescriptor describe(String app, int shuffleId, long mapId, int start, int end) {
        try {
            return describeOrRegister(app, shuffleId, mapId, start, end);
        } finally {
            closeDeregistered(); // regions this call released to make room, closed outside the lock
        }
    }

    private BlockDescriptor describeOrRegister(String app, int shuffleId, long mapId, int start, int end) {
        boolean reclaimed = false;
        while (true) {
            MapOutput out = output(app, shuffleId, mapId);
            CompletableFuture<Void> registration;
            boolean mine = false;
            synchronized (this) {
                ensureOpen();
                if (out.released) {
                    continue; // replaced or forgotten meanwhile: look again
                }
                BlockDescriptor d = describe(out, start, end);
                if (d != null) {
                    return d;
                }
                if (out.registration == null) {
                    if (!makeRoom(out.size(), out, reclaimed)) {
                        registration = null; // the node's budget is spent: other applications' idle regions, below
                    } else {
                        registeredBytes += out.size(); // reserved while the file is registered outside the lock
                        out.registration = new CompletableFuture<>();
                        registrationsUnderWay.add(out.registration);
                        mine = true;
                        registration = out.registration;
                    }
                } else {
                    registration = out.registration;
                }
            }
            if (registration == null) {
                closeDeregistered();
                budget.reclaimIdle(out.size(), this); // outside our lock: it takes theirs
                reclaimed = true;
            } else if (mine) {
                register(out, registration);
            } else {
                awaitOther(registration);
            }
        }
    }

    /**
     * As {@link #describe(String, int, long, int, int)} when that needs no slow work; null when it
     * would have to find the output on disk or register its file. For the completion poller, which
     * answers what it can at once and hands the rest to threads that may block.
     */
    public synchronized BlockDescriptor describeIfRegistered(String app, int shuffleId, long mapId, int start, int end) {
        ensureOpen();
        MapOutput out = known(app, shuffleId, mapId);
        if (out == null && resolver != null) {
            return null;
        }
        return describe(required(out, app, shuffleId, mapId), start, end);
    }

    /**
     * The output, known or found by the resolver (outside the lock); NoSuchMapOutputException if
     * neither. Requests for the same unknown output share one search: at a stage's start every
     * reducer asks for every map output at once.
     */
    private MapOutput output(String app, int shuffleId, long mapId) {
        OutputKey key = new OutputKey(app, shuffleId, mapId);
        CompletableFuture<MapOutput> search;
        Resolver r = null;
        synchronized (this) {
            ensureOpen();
            MapOutput out = known(app, shuffleId, mapId);
            if (out != null || resolver == null) {
                return required(out, app, shuffleId, mapId);
            }
            search = searches.get(key);
            if (search == null) {
                search = new CompletableFuture<>();
                searches.put(key, search);
                r = resolver;
            }
        }
        if (r == null) { // another request is searching
            return required(awaitOther(search), app, shuffleId, mapId);
        }
        MapOutput out = null;
        RuntimeException failure = null;
        try {
            ResolvedOutput found = r.resolve(app, shuffleId, mapId);
            synchronized (this) {
                ensureOpen();
                out = known(app, shuffleId, mapId); // registered meanwhile
                if (out == null && found != null) {
                    out = add(app, shuffleId, mapId, found);
                }
            }
        } catch (IOException e) {
            failure = new UncheckedIOException("map output " + mapId + " of shuffle " + shuffleId + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            failure = e;
        } finally {
            synchronized (this) {
                searches.remove(key);
            }
        }
        if (failure != null) {
            search.completeExceptionally(failure);
            throw failure;
        }
        search.complete(out);
        return required(out, app, shuffleId, mapId);
    }

    /** What another thread's search or registration came to; its failure is thrown here as it was there. */
    private static <T> T awaitOther(CompletableFuture<T> work) {
        try {
            return work.join();
        } catch (CompletionException e) {
            throw e.getCause() instanceof RuntimeException cause ? cause : e;
        }
    }

    /** The block of partitions {@code [start, end)} of {@code out}; null if its file is not registered. Under the lock. */
    private BlockDescriptor describe(MapOutput out, int start, int end) {
        int partitions = out.offsets.length - 1;
        if (start < 0 || end > partitions || start >= end) {
            throw new PartitionRangeException("partitions [" + start + ", " + end + ") of map output " + out.mapId
                    + " of shuffle " + out.shuffleId + ", which has " + partitions);
        }
        long offset = out.offsets[start];
        long length = out.offsets[end] - offset;
        long raw = length;
        if (out.rawLengths != null) {
            raw = 0;
            for (int p = start; p < end; p++) {
                raw += out.rawLengths[p];
            }
        }
        if (length == 0) {
            return new BlockDescriptor(out.shuffleId, out.mapId, start, end, 0, 0, 0, raw);
        }
        if (out.region == null) {
            return null;
        }
        registered.get(out); // touch: most recently used
        out.describedAt = clock.getAsLong();
        return new BlockDescriptor(out.shuffleId, out.mapId, start, end, out.region.address() + offset, length,
                out.region.rkey(), raw);
    }

    /**
     * The whole layout of a registered output whose raw partition sizes are not recorded apart
     * (Spark's), for a reducer that just had a block of it described (so within that block's lease);
     * null otherwise.
     */
    public synchronized MapOutputLayout layoutIfRegistered(String app, int shuffleId, long mapId) {
        if (closed) {
            return null;
        }
        MapOutput out = known(app, shuffleId, mapId);
        if (out == null || out.region == null || out.rawLengths != null || out.released) {
            return null;
        }
        return new MapOutputLayout(shuffleId, mapId, out.region.address(), out.region.rkey(), out.offsets);
    }

    /** Registers {@code out}'s file, outside the lock; its bytes were reserved. Completes {@code registration} either way. */
    private void register(MapOutput out, CompletableFuture<Void> registration) {
        MemoryRegion region = null;
        RuntimeException failure = null;
        // Opened again here, not trusted from when it was found: its owner could have replaced it since.
        try {
            FileChannel ch = out.dataFile.open(true);
            try {
                if (ch.size() != out.size()) {
                    throw new RefusedFileException(out.dataFile + " has " + ch.size() + " bytes now, but its index ends at "
                            + out.size());
                }
            } catch (IOException | RuntimeException e) {
                ch.close();
                throw e;
            }
            // Peers only read, however it was opened. The region takes the channel (the software provider
            // answers reads from it with sendfile; a NIC's provider closes it at once).
            region = pd.registerOwnedFile(ch, 0, out.size(), Access.REMOTE_READ);
        } catch (IOException e) {
            failure = new UncheckedIOException("cannot map " + out.dataFile + " for registration: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            failure = e;
        }
        synchronized (this) {
            out.registration = null;
            registrationsUnderWay.remove(registration);
            if (failure == null && !out.released && !closed) {
                out.region = region;
                registered.put(out, Boolean.TRUE);
                registrations++;
                region = null;
            } else {
                registeredBytes -= out.size(); // give the reservation back
                budget.release(out.size());
            }
        }
        if (region != null) {
            region.close(); // its output was forgotten while it was being registered
        }
        if (failure != null) {
            registration.completeExceptionally(failure);
            throw failure;
        }
        registration.complete(null);
    }

    /**
     * Under the lock: reserves {@code bytes} under this registry's limit and in the node's budget,
     * deregistering this application's least recently described regions outside their lease as needed.
     * False if only the node's budget is short and {@code lastTry} is not set (the caller then takes
     * other applications' idle regions, outside this lock, and tries again); otherwise throws
     * RegisteredMemoryExhaustedException naming the numbers.
     */
    private boolean makeRoom(long bytes, MapOutput forWhom, boolean lastTry) {
        if (bytes > limitBytes) {
            throw new RegisteredMemoryExhaustedException("map output " + forWhom.mapId + " of shuffle " + forWhom.shuffleId
                    + " has " + bytes + " bytes, more than the registered-memory limit of " + limitBytes);
        }
        long now = clock.getAsLong();
        Iterator<MapOutput> lru = registered.keySet().iterator();
        boolean reserved = false;
        // Room under this registry's limit and in the node's budget; only this application's regions are released.
        while ((registeredBytes + bytes > limitBytes || !(reserved = budget.tryReserve(bytes))) && lru.hasNext()) {
            MapOutput victim = lru.next();
            if (now - victim.describedAt < leaseNanos) {
                continue; // a reducer may be reading it
            }
            lru.remove();
            deregister(victim);
        }
        if (registeredBytes + bytes > limitBytes) {
            if (reserved) {
                budget.release(bytes);
            }
            throw new RegisteredMemoryExhaustedException("registering " + bytes + " bytes of map output " + forWhom.mapId
                    + " of shuffle " + forWhom.shuffleId + " would exceed the registered-memory limit of " + limitBytes
                    + " bytes: " + registeredBytes + " bytes are registered and all were described within the lease");
        }
        if (!reserved && !budget.tryReserve(bytes)) {
            if (!lastTry) {
                return false;
            }
            throw new RegisteredMemoryExhaustedException("registering " + bytes + " bytes of map output " + forWhom.mapId
                    + " of shuffle " + forWhom.shuffleId + " would exceed the node's registered-memory budget of "
                    + budget.limitBytes() + " bytes across applications (" + budget.usedBytes()
                    + " in use, all described within the lease)");
        }
        return true;
    }

    /**
     * Deregisters this registry's least recently described regions outside their lease until
     * {@code bytes} are released or none is left; returns the bytes released. For the budget, when
     * another application needs room.
     */
    long releaseIdle(long bytes) {
        long released = 0;
        synchronized (this) {
            if (closed) {
                return 0;
            }
            long now = clock.getAsLong();
            for (Iterator<MapOutput> lru = registered.keySet().iterator(); lru.hasNext() && released < bytes; ) {
                MapOutput victim = lru.next();
                if (now - victim.describedAt < leaseNanos) {
                    continue;
                }
                lru.remove();
                released += victim.size();
                deregister(victim);
            }
        }
        closeDeregistered();
        return released;
    }

    /**
     * Under the lock: takes {@code out}'s region off the books; {@link #closeDeregistered()} closes it
     * after the lock is released. Closing waits for transfers still using the region (the software
     * provider, up to seconds), which must not hold up every other request to the registry.
     */
    private void deregister(MapOutput out) {
        toClose.add(out.region);
        out.region = null;
        registeredBytes -= out.size();
        // Given back now, so makeRoom sees the room it made; the pages stay pinned until the close.
        budget.release(out.size());
    }

    /** Closes the regions deregistered so far, outside the lock. */
    private void closeDeregistered() {
        List<MemoryRegion> now;
        synchronized (this) {
            if (toClose.isEmpty()) {
                return;
            }
            now = new ArrayList<>(toClose);
            toClose.clear();
        }
        now.forEach(MemoryRegion::close);
    }

    /** Forgets {@code out}: deregisters its region, or has a registration under way give its region back. */
    private void release(MapOutput out) {
        out.released = true;
        if (out.region != null) {
            registered.remove(out);
            deregister(out);
        }
    }

    /** Forgets a shuffle: deregisters its regions (the files belong to the engine that wrote them). */
    public void unregisterShuffle(int shuffleId) {
        unregisterShuffle(OWN, shuffleId);
    }

    public void unregisterShuffle(String app, int shuffleId) {
        synchronized (this) {
            Map<Long, MapOutput> maps = outputs.remove(new ShuffleKey(app, shuffleId));
            if (maps != null) {
                maps.values().forEach(this::release);
            }
        }
        closeDeregistered();
    }

    /** Forgets every output of an application and deregisters their regions; returns how many there were. */
    public int unregisterApplication(String app) {
        int n;
        synchronized (this) {
            n = forgetApplication(app);
        }
        closeDeregistered();
        return n;
    }

    private int forgetApplication(String app) {
        int n = 0;
        for (Iterator<Map.Entry<ShuffleKey, Map<Long, MapOutput>>> it = outputs.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<ShuffleKey, Map<Long, MapOutput>> e = it.next();
            if (e.getKey().app().equals(app)) {
                it.remove();
                n += e.getValue().size();
                e.getValue().values().forEach(this::release);
            }
        }
        return n;
    }

    private MapOutput known(String app, int shuffleId, long mapId) {
        Map<Long, MapOutput> maps = outputs.get(new ShuffleKey(app, shuffleId));
        return maps == null ? null : maps.get(mapId);
    }

    private static MapOutput required(MapOutput out, String app, int shuffleId, long mapId) {
        if (out == null) {
            throw new NoSuchMapOutputException("no map output " + mapId + " of shuffle " + shuffleId
                    + (app.equals(OWN) ? "" : " of " + app) + " is registered here");
        }
        return out;
    }

    /** Bytes registered with the device now, or reserved by registrations under way. */
    public synchronized long registeredBytes() {
        return registeredBytes;
    }

    /** Regions registered now. */
    public synchronized int registeredRegions() {
        return registered.size();
    }

    /** Registrations made since creation: equals the number of distinct outputs described unless regions were released. */
    public synchronized long registrations() {
        return registrations;
    }

    /** Map outputs known, registered or not. */
    public synchronized int mapOutputs() {
        int n = 0;
        for (Map<Long, MapOutput> maps : outputs.values()) {
            n += maps.size();
        }
        return n;
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("map output registry is closed");
        }
    }

    /** Deregisters every region, after waiting for registrations under way. */
    @Override
    public void close() {
        List<CompletableFuture<Void>> underWay;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            budget.leave(this);
            List<ShuffleKey> shuffles = new ArrayList<>(outputs.keySet());
            shuffles.forEach(k -> outputs.remove(k).values().forEach(this::release));
            underWay = new ArrayList<>(registrationsUnderWay);
        }
        closeDeregistered();
        // ibv_reg_mr cannot be interrupted: wait for registrations under way, which close their
        // regions on seeing the registry closed, so none outlives it (or its protection domain).
        for (CompletableFuture<Void> r : underWay) {
            try {
                r.join();
            } catch (CompletionException | java.util.concurrent.CancellationException failed) {
                // it failed: nothing was registered
            }
        }
    }
}
