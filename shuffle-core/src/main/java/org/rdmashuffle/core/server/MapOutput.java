package org.rdmashuffle.core.server;

import java.util.concurrent.CompletableFuture;

import org.rdmashuffle.core.server.files.OutputFile;
import org.rdmashuffle.verbs.MemoryRegion;

/**
 * One committed map output in a {@link MapOutputRegistry}: its file, its index, and its region while
 * registered. Mutable fields are guarded by the registry's lock.
 */
final class MapOutput {
    /** Pages are what registering pins: a region of one byte costs one. */
    static final long PAGE = 4096;

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
    long describedAt;

    MapOutput(String app, int shuffleId, long mapId, OutputFile dataFile, OutputIndex index, boolean resolved) {
        this.app = app;
        this.shuffleId = shuffleId;
        this.mapId = mapId;
        this.dataFile = dataFile;
        this.index = index;
        this.resolved = resolved;
    }

    /** The data file's size. */
    long size() {
        return index.size();
    }

    /** What its region counts against the registered-memory limits: whole pages. */
    long pinnedBytes() {
        return (size() + PAGE - 1) / PAGE * PAGE;
    }

    @Override
    public String toString() {
        return "map output " + mapId + " of shuffle " + shuffleId;
    }
}
