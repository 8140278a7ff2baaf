package org.rdmashuffle.core.server;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

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
 * reading them right now). If nothing can be released the request fails with
 * {@link RegisteredMemoryExhaustedException} naming the numbers. Thread-safe.
 */
public final class MapOutputRegistry implements AutoCloseable {
    private final ProtectionDomain pd;
    private final long limitBytes;
    private final long leaseNanos;
    private final LongSupplier clock;
    /** Outputs by shuffle, then map id. */
    private final Map<Integer, Map<Long, MapOutput>> outputs = new HashMap<>();
    /** Registered outputs in least-recently-described order. */
    private final LinkedHashMap<MapOutput, Boolean> registered = new LinkedHashMap<>(16, 0.75f, true);
    private long registeredBytes;
    private long registrations;
    private boolean closed;

    /** One committed map output: its file, its partition offsets, and its region while registered. */
    private static final class MapOutput {
        final int shuffleId;
        final long mapId;
        final Path dataFile;
        final long[] offsets;
        MemoryRegion region;
        long describedAt;

        MapOutput(int shuffleId, long mapId, Path dataFile, long[] offsets) {
            this.shuffleId = shuffleId;
            this.mapId = mapId;
            this.dataFile = dataFile;
            this.offsets = offsets;
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
        this(pd, limitBytes, leaseMillis, System::nanoTime);
    }

    MapOutputRegistry(ProtectionDomain pd, long limitBytes, long leaseMillis, LongSupplier clock) {
        if (limitBytes <= 0) {
            throw new IllegalArgumentException("registered-memory limit must be positive: " + limitBytes);
        }
        this.pd = pd;
        this.limitBytes = limitBytes;
        this.leaseNanos = leaseMillis * 1_000_000L;
        this.clock = clock;
    }

    /**
     * Records a committed map output. {@code offsets} are the partition boundaries as Spark's index
     * file holds them: {@code numPartitions + 1} non-decreasing values from 0 to the data file's size.
     */
    public synchronized void register(int shuffleId, long mapId, Path dataFile, long[] offsets) {
        ensureOpen();
        String what = "map output " + mapId + " of shuffle " + shuffleId + " (" + dataFile + ")";
        if (offsets.length < 2 || offsets[0] != 0) {
            throw new IllegalArgumentException(what + ": offsets must start at 0 and bound at least one partition");
        }
        for (int i = 1; i < offsets.length; i++) {
            if (offsets[i] < offsets[i - 1]) {
                throw new IllegalArgumentException(what + ": offset of partition " + i + " (" + offsets[i]
                        + ") is below that of partition " + (i - 1) + " (" + offsets[i - 1] + ")");
            }
        }
        long size;
        try {
            size = java.nio.file.Files.size(dataFile);
        } catch (IOException e) {
            throw new UncheckedIOException(what + ": cannot read the data file", e);
        }
        if (size != offsets[offsets.length - 1]) {
            throw new IllegalArgumentException(what + ": the index ends at " + offsets[offsets.length - 1]
                    + " but the data file has " + size + " bytes");
        }
        MapOutput previous = outputs.computeIfAbsent(shuffleId, s -> new HashMap<>())
                .put(mapId, new MapOutput(shuffleId, mapId, dataFile, offsets.clone()));
        if (previous != null) {
            release(previous); // a re-attempt replaced it
        }
    }

    /** The block holding partitions {@code [start, end)} of a map output, registering its file if needed. */
    public synchronized BlockDescriptor describe(int shuffleId, long mapId, int start, int end) {
        ensureOpen();
        MapOutput out = find(shuffleId, mapId);
        int partitions = out.offsets.length - 1;
        if (start < 0 || end > partitions || start >= end) {
            throw new IllegalArgumentException("partitions [" + start + ", " + end + ") of map output " + mapId
                    + " of shuffle " + shuffleId + ", which has " + partitions);
        }
        long offset = out.offsets[start];
        long length = out.offsets[end] - offset;
        if (length == 0) {
            return new BlockDescriptor(shuffleId, mapId, start, end, 0, 0, 0);
        }
        MemoryRegion region = registeredRegion(out);
        out.describedAt = clock.getAsLong();
        return new BlockDescriptor(shuffleId, mapId, start, end, region.address() + offset, length, region.rkey());
    }

    private MemoryRegion registeredRegion(MapOutput out) {
        if (out.region != null) {
            registered.get(out); // touch: most recently used
            return out.region;
        }
        makeRoom(out.size(), out);
        try (FileChannel ch = FileChannel.open(out.dataFile, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            // READ and WRITE: kernels before 6.2 can only register a writable file mapping (see
            // ProtectionDomain.registerFile). Peers still only read: the region allows REMOTE_READ alone.
            out.region = pd.registerFile(ch, 0, out.size(), Access.REMOTE_READ);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot map " + out.dataFile + " for registration", e);
        }
        registered.put(out, Boolean.TRUE);
        registeredBytes += out.size();
        registrations++;
        return out.region;
    }

    private void makeRoom(long bytes, MapOutput forWhom) {
        if (bytes > limitBytes) {
            throw new RegisteredMemoryExhaustedException("map output " + forWhom.mapId + " of shuffle " + forWhom.shuffleId
                    + " has " + bytes + " bytes, more than the registered-memory limit of " + limitBytes);
        }
        long now = clock.getAsLong();
        Iterator<MapOutput> lru = registered.keySet().iterator();
        while (registeredBytes + bytes > limitBytes && lru.hasNext()) {
            MapOutput victim = lru.next();
            if (now - victim.describedAt < leaseNanos) {
                continue; // a reducer may be reading it
            }
            lru.remove();
            deregister(victim);
        }
        if (registeredBytes + bytes > limitBytes) {
            throw new RegisteredMemoryExhaustedException("registering " + bytes + " bytes of map output " + forWhom.mapId
                    + " of shuffle " + forWhom.shuffleId + " would exceed the registered-memory limit of " + limitBytes
                    + " bytes: " + registeredBytes + " bytes are registered and all were described within the lease");
        }
    }

    private void deregister(MapOutput out) {
        out.region.close();
        out.region = null;
        registeredBytes -= out.size();
    }

    private void release(MapOutput out) {
        if (out.region != null) {
            registered.remove(out);
            deregister(out);
        }
    }

    /** Forgets a shuffle: deregisters its regions (the files belong to the engine that wrote them). */
    public synchronized void unregisterShuffle(int shuffleId) {
        Map<Long, MapOutput> maps = outputs.remove(shuffleId);
        if (maps != null) {
            maps.values().forEach(this::release);
        }
    }

    private MapOutput find(int shuffleId, long mapId) {
        Map<Long, MapOutput> maps = outputs.get(shuffleId);
        MapOutput out = maps == null ? null : maps.get(mapId);
        if (out == null) {
            throw new IllegalArgumentException("no map output " + mapId + " of shuffle " + shuffleId + " is registered here");
        }
        return out;
    }

    /** Bytes registered with the device now. */
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

    /** Deregisters every region. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        List<Integer> shuffles = new ArrayList<>(outputs.keySet());
        shuffles.forEach(this::unregisterShuffle);
    }
}
