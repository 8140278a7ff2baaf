package org.rdmashuffle.core.server;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;

import org.rdmashuffle.core.protocol.BlockDescriptor;
import org.rdmashuffle.core.protocol.MapOutputLayout;
import org.rdmashuffle.core.server.files.OutputFile;
import org.rdmashuffle.core.server.files.RefusedFileException;
import org.rdmashuffle.core.transport.MemoryRegistration;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.ProtectionDomain;

/**
 * One committed map output in a {@link MapOutputRegistry}: its file, its index, and its region while
 * registered. Mutable fields are guarded by the registry's lock.
 */
final class MapOutput {
    final String app;
    final int shuffleId;
    final long mapId;
    final OutputFile dataFile;
    final OutputIndex index;
    /** Found on disk by the resolver (so it may be forgotten and found again), not registered by this process's caller. */
    final boolean resolved;
    MemoryRegion region;
    /** Set while a thread registers the file outside the lock; others wait on it. */
    CompletableFuture<Void> registration;
    /** Replaced by a re-attempt, forgotten with its shuffle or application, or its index evicted. */
    boolean released;
    /** When it was last described in an answer that is not held: its region stays registered for a lease from then. */
    long describedAt;
    /** Connections holding it through held answers ({@link ConnectionHolds}), and when the latest was described. */
    int holders;
    long heldAt;

    /**
     * Whether a reducer may be reading its region at {@code now}: within the lease of its latest answer
     * that was not held, or held by a connection within the lease of its latest held answer (a holder
     * that never releases keeps it no longer than an answer that was not held would).
     */
    boolean leased(long now, long leaseNanos) {
        return now - describedAt < leaseNanos || (holders > 0 && now - heldAt < leaseNanos);
    }

    MapOutput(String app, int shuffleId, long mapId, OutputFile dataFile, OutputIndex index, boolean resolved) {
        this.app = app;
        this.shuffleId = shuffleId;
        this.mapId = mapId;
        this.dataFile = dataFile;
        this.index = index;
        this.resolved = resolved;
    }

    /**
     * An output in a file this process names (and so trusts): an executor's own, or one its caller
     * registered; IllegalArgumentException if the index does not end at the file's size.
     */
    static MapOutput named(String app, int shuffleId, long mapId, Path dataFile, long[] offsets) {
        String what = "map output " + mapId + " of shuffle " + shuffleId + " (" + dataFile + ")";
        long size;
        try {
            size = Files.size(dataFile);
        } catch (IOException e) {
            throw new UncheckedIOException(what + ": cannot read the data file", e);
        }
        if (offsets.length > 0 && size != offsets[offsets.length - 1]) {
            throw new IllegalArgumentException(what + ": the index ends at " + offsets[offsets.length - 1]
                    + " but the data file has " + size + " bytes");
        }
        return new MapOutput(app, shuffleId, mapId, OutputFile.trusted(dataFile),
                OutputIndex.of(shuffleId, mapId, offsets, null, what), false);
    }

    /** The data file's size. */
    long size() {
        return index.size();
    }

    /** What its region counts against the registered-memory limits: whole pages (a region of one byte pins one). */
    long pinnedBytes() {
        return MemoryRegistration.roundUpToPage(size());
    }

    /**
     * The block of partitions {@code [start, end)}: with no address for an empty one; null if it is not
     * empty and the file is not registered. PartitionRangeException if the output has no such partitions.
     */
    BlockDescriptor describe(int start, int end) {
        return describe(start, end, region == null ? 0 : region.rkey());
    }

    /** As {@link #describe(int, int)}, readable under {@code rkey} (the region's, or a window's over it). */
    BlockDescriptor describe(int start, int end, int rkey) {
        int partitions = index.partitions();
        if (start < 0 || end > partitions || start >= end) {
            throw new PartitionRangeException("partitions [" + start + ", " + end + ") of " + this + ", which has " + partitions);
        }
        long offset = index.offset(start);
        long length = index.offset(end) - offset;
        long raw = index.rawLength(start, end, length);
        if (length == 0) {
            return new BlockDescriptor(shuffleId, mapId, start, end, 0, 0, 0, raw);
        }
        if (region == null) {
            return null;
        }
        return new BlockDescriptor(shuffleId, mapId, start, end, region.address() + offset, length, rkey, raw);
    }

    /** Every partition's place in its region, which is registered. */
    MapOutputLayout layout(int rkey) {
        return new MapOutputLayout(shuffleId, mapId, region.address(), rkey, index.offsets());
    }

    /**
     * Registers its data file for peers' reads: slow (ibv_reg_mr pins, and so reads, every page), so
     * called outside the registry's lock. The file is opened again here, not trusted from when it was
     * found: its owner could have replaced it since.
     */
    MemoryRegion registerFile(ProtectionDomain pd, MemoryRegistration registration, int extraAccess) throws IOException {
        FileChannel ch = dataFile.open(true);
        try {
            if (ch.size() != size()) {
                throw new RefusedFileException(dataFile + " has " + ch.size() + " bytes now, but its index ends at " + size());
            }
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
        // Peers only read, however it was opened (extraAccess: MW_BIND, when they read through windows). The region takes the channel (the software provider
        // answers reads from it with sendfile; a NIC's provider closes it at once).
        return pd.registerOwnedFile(ch, 0, size(), registration.access(Access.REMOTE_READ | extraAccess));
    }

    @Override
    public String toString() {
        return "map output " + mapId + " of shuffle " + shuffleId;
    }
}
