package org.rdmashuffle.hadoop;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.zip.CRC32;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.JobID;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.yarn.server.api.AuxiliaryLocalPathHandler;
import org.rdmashuffle.core.server.MapOutputRegistry;
import org.rdmashuffle.core.server.files.Confinement;
import org.rdmashuffle.core.server.files.RefusedFileException;

/**
 * Finds a MapReduce map output where the map task left it, as the stock ShuffleHandler does:
 * {@code usercache/<user>/appcache/<application>/output/<attempt>/file.out} and its
 * {@code file.out.index} under one of the NodeManager's local dirs. The index (checksummed, bounded
 * in size) gives each reduce partition's offset, stored length and raw length; partitions must lie
 * end to end from offset 0, as the map's final merge writes them.
 *
 * <p>The application owns everything below its directories, so unlike the stock handler (Hadoop's
 * {@code getLocalPathForRead}, which tests a file's existence following links) the search follows no
 * link: each of the application's directories is looked in with {@link Confinement#exists}, so a
 * linked {@code output} or attempt directory is absent whatever it leads to, and what is found is
 * opened within the application's {@link Confinement} (no link followed, owner checked when security
 * is on). The reducer's answer thus never depends on what lies outside the application's directories.
 */
final class MapOutputFiles implements MapOutputRegistry.Resolver {
    private static final System.Logger LOG = System.getLogger(MapOutputFiles.class.getName());

    private final AuxiliaryLocalPathHandler localDirs;
    private final Function<String, String> userOfJob;
    private final boolean checkOwner;
    private final java.util.concurrent.atomic.AtomicLong resolved = new java.util.concurrent.atomic.AtomicLong();
    /** Bytes of one partition's record in an index file. */
    private static final int RECORD = 24;

    /**
     * @param userOfJob the user who runs a job (by job id string), null for a job the node does not know
     * @param checkOwner whether files must belong to the job's user (with Hadoop security on, as the stock handler checks)
     */
    MapOutputFiles(AuxiliaryLocalPathHandler localDirs, Function<String, String> userOfJob, boolean checkOwner) {
        this.localDirs = localDirs;
        this.userOfJob = userOfJob;
        this.checkOwner = checkOwner;
    }

    @Override
    public MapOutputRegistry.ResolvedOutput resolve(String app, int shuffleId, long mapId) throws IOException {
        if (shuffleId != MapReduceIds.SHUFFLE) {
            return null;
        }
        JobID job;
        TaskAttemptID attempt;
        try {
            job = MapReduceIds.jobOf(app);
            attempt = MapReduceIds.mapAttempt(job, mapId);
        } catch (IllegalArgumentException notMapReduce) {
            return null;
        }
        String user = userOfJob.apply(job.toString());
        if (user == null) {
            return null;
        }
        String appDir = "usercache/" + user + "/appcache/" + app;
        String base = "output/" + attempt + "/";
        Confinement confinement;
        try {
            confinement = confinement(appDir, user);
        } catch (IOException noLocalDir) { // DiskErrorException: on no local dir
            LOG.log(System.Logger.Level.DEBUG, () -> "no directory of " + app + " here: " + noLocalDir.getMessage());
            return null;
        }
        java.nio.file.Path indexFile = find(confinement, base + "file.out.index", null);
        java.nio.file.Path dataFile = indexFile == null ? null : find(confinement, base + "file.out", indexFile);
        if (dataFile == null) {
            LOG.log(System.Logger.Level.DEBUG, () -> "no output of " + attempt + " here");
            return null; // lost, or never here: the reducer reports it and the map is re-run
        }
        long[][] parsed = readIndex(indexFile, confinement.readAll(indexFile, Confinement.MAX_INDEX_BYTES));
        long[] offsets = parsed[0];
        long size;
        try (java.nio.channels.FileChannel ch = confinement.open(dataFile, false)) {
            size = ch.size();
        }
        if (size != offsets[offsets.length - 1]) {
            throw new IOException(dataFile + " has " + size + " bytes but its index ends at " + offsets[offsets.length - 1]);
        }
        resolved.incrementAndGet();
        return new MapOutputRegistry.ResolvedOutput(confinement.file(dataFile), offsets, parsed[1]);
    }

    /**
     * {@code relative} below one of the application's directories, looked for without following a link;
     * first in the directory holding {@code near} (the index, beside which the map wrote its data) if
     * given; or null.
     */
    private static java.nio.file.Path find(Confinement confinement, String relative, java.nio.file.Path near)
            throws IOException {
        List<java.nio.file.Path> dirs = new ArrayList<>(confinement.dirs());
        if (near != null) {
            dirs.sort(java.util.Comparator.comparing(dir -> !near.startsWith(dir)));
        }
        for (java.nio.file.Path dir : dirs) {
            java.nio.file.Path file = dir.resolve(relative);
            if (confinement.exists(file)) {
                return file;
            }
        }
        return null;
    }

    /**
     * The application's directories on every local dir, confined (no link below the local dir, none
     * followed to find out: a linked one is skipped like a missing one), and the owner its files must
     * have when security is on (then containers run as the job's user).
     */
    private Confinement confinement(String appDir, String user) throws IOException {
        List<java.nio.file.Path> dirs = new ArrayList<>();
        for (Path p : localDirs.getAllLocalPathsForRead(appDir)) {
            java.nio.file.Path full = java.nio.file.Path.of(p.toUri().getPath());
            try {
                dirs.add(Confinement.applicationDirAt(full, appDir));
            } catch (NoSuchFileException | NotDirectoryException | RefusedFileException notThere) {
                LOG.log(System.Logger.Level.DEBUG, () -> "not searched: " + notThere.getMessage());
            }
        }
        return new Confinement(dirs, checkOwner ? user : null);
    }

    /**
     * MapReduce's index file as SpillRecord reads it, but from bytes already bounded: per partition
     * (start offset, raw length, part length) as big-endian longs, then the CRC32 of those records.
     * Partitions must lie end to end from 0. Returns {offsets (partitions + 1), raw lengths}.
     */
    static long[][] readIndex(java.nio.file.Path index, byte[] bytes) throws IOException {
        if (bytes.length < RECORD + 8 || (bytes.length - 8) % RECORD != 0) {
            throw new IOException(index + " has " + bytes.length + " bytes: not a MapReduce index (24 per partition + 8)");
        }
        int partitions = (bytes.length - 8) / RECORD;
        ByteBuffer buf = ByteBuffer.wrap(bytes);
        CRC32 crc = new CRC32();
        crc.update(bytes, 0, partitions * RECORD);
        if (crc.getValue() != buf.getLong(partitions * RECORD)) {
            throw new IOException(index + ": checksum error");
        }
        long[] offsets = new long[partitions + 1];
        long[] raw = new long[partitions];
        for (int p = 0; p < partitions; p++) {
            long start = buf.getLong(p * RECORD);
            long rawLength = buf.getLong(p * RECORD + 8);
            long partLength = buf.getLong(p * RECORD + 16);
            if (start != offsets[p] || partLength < 0 || rawLength < 0 || start + partLength < start) {
                throw new IOException(index + ": partition " + p + " at " + start + " (" + partLength
                        + " bytes) does not follow the previous one's end " + offsets[p]);
            }
            offsets[p + 1] = start + partLength;
            raw[p] = rawLength;
        }
        return new long[][] {offsets, raw};
    }

    /** Map outputs found and handed to the registry so far. */
    long resolved() {
        return resolved.get();
    }
}
