package org.rdmashuffle.spark.service;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import org.rdmashuffle.core.server.MapOutputRegistry;
import org.rdmashuffle.core.server.files.Confinement;

/**
 * Finds a Spark map output where its executor left it, as Spark's external shuffle service does, but
 * without the executor's help: every executor of an application keeps its block files in
 * {@code blockmgr-<uuid>/<two hex digits>/} directories directly under the application's directories
 * on the node (on YARN: {@code usercache/<user>/appcache/<application>} in each NodeManager local dir),
 * and a map output is the pair {@code shuffle_<shuffle>_<map>_0.index} and {@code .data} there. Spark's
 * map ids are task attempt ids, unique within an application, so the first pair found is the output.
 *
 * <p>Where to look first is computed as Spark's {@code DiskBlockManager} places a file: an executor
 * with {@code L} local dirs puts {@code name} in sub dir {@code (hash(name) / L) % 64} of one of its
 * {@code blockmgr-*} dirs. On YARN an executor's local dirs are the application's dirs on every
 * NodeManager local dir, so {@code L} is their number and each {@code blockmgr-*} dir needs one look.
 * An executor laid out otherwise (a failed disk, {@code spark.diskStore.subDirectories} changed) is
 * found by searching every sub dir, which {@link #searches()} counts.
 *
 * <p>Only the directories the service itself names for an authenticated application are searched; a
 * reducer names nothing but the shuffle and map ids. Index and data files are opened within the
 * application's {@link Confinement} (no link followed, inside its directories, owner checked when
 * security is on); an index is bounded before it is read. Spark-free (it runs in a NodeManager).
 */
public final class SparkOutputFiles implements MapOutputRegistry.Resolver {
    private static final System.Logger LOG = System.getLogger(SparkOutputFiles.class.getName());

    private final Function<String, Confinement> applications;
    private final AtomicLong resolved = new AtomicLong();
    private final AtomicLong searches = new AtomicLong();
    /** Spark's default {@code spark.diskStore.subDirectories}. */
    static final int SUB_DIRS_PER_LOCAL_DIR = 64;

    /**
     * @param applications an application's directories on this node (holding its {@code blockmgr-*}
     *        dirs; none if it has none here) and the owner its files must have
     */
    public SparkOutputFiles(Function<String, Confinement> applications) {
        this.applications = applications;
    }

    @Override
    public MapOutputRegistry.ResolvedOutput resolve(String app, int shuffleId, long mapId) throws IOException {
        if (mapId < 0) {
            return null;
        }
        String name = "shuffle_" + shuffleId + "_" + mapId + "_0";
        Confinement confinement = applications.apply(app);
        List<Path> roots = confinement.dirs();
        List<Path> managers = new java.util.ArrayList<>();
        for (Path root : roots) {
            if (Files.isDirectory(root)) {
                try (DirectoryStream<Path> found = Files.newDirectoryStream(root, "blockmgr-*")) {
                    found.forEach(managers::add);
                }
            }
        }
        Path index = find(managers, roots.size(), name + ".index");
        if (index == null) {
            LOG.log(System.Logger.Level.DEBUG, () -> "no " + name + " of " + app + " on this node");
            return null;
        }
        // The data file may hash into another of the executor's local dirs than its index.
        return read(confinement, index, find(managers, roots.size(), name + ".data"));
    }

    /** {@code fileName} in one of {@code managers}' sub dirs: where Spark would have put it first, then anywhere; or null. */
    private Path find(List<Path> managers, int localDirs, String fileName) throws IOException {
        String expected = subDirOf(fileName, Math.max(1, localDirs));
        for (Path manager : managers) {
            Path file = manager.resolve(expected).resolve(fileName);
            if (Files.isRegularFile(file)) {
                return file;
            }
        }
        searches.incrementAndGet();
        for (Path manager : managers) {
            try (DirectoryStream<Path> subDirs = Files.newDirectoryStream(manager, "[0-9a-f][0-9a-f]")) {
                for (Path sub : subDirs) {
                    Path file = sub.resolve(fileName);
                    if (Files.isRegularFile(file)) {
                        return file;
                    }
                }
            }
        }
        return null;
    }

    /** The sub dir Spark's DiskBlockManager puts {@code fileName} in, for an executor with {@code localDirs} local dirs. */
    static String subDirOf(String fileName, int localDirs) {
        int h = fileName.hashCode();
        int hash = h == Integer.MIN_VALUE ? 0 : Math.abs(h); // Spark's Utils.nonNegativeHash
        return String.format("%02x", (hash / localDirs) % SUB_DIRS_PER_LOCAL_DIR);
    }

    private MapOutputRegistry.ResolvedOutput read(Confinement confinement, Path index, Path data) throws IOException {
        long[] offsets = readIndex(index, confinement.readAll(index, Confinement.MAX_INDEX_BYTES));
        long end = offsets[offsets.length - 1];
        if (data == null) {
            if (end != 0) {
                throw new IOException(index + " indexes " + end + " bytes but its data file is missing");
            }
            return null; // every partition empty: Spark writes no data file and reducers never ask
        }
        long size;
        try (FileChannel ch = confinement.open(data, false)) {
            size = ch.size();
        }
        if (size != end) {
            throw new IOException(data + " has " + size + " bytes but its index ends at " + end);
        }
        resolved.incrementAndGet();
        return new MapOutputRegistry.ResolvedOutput(confinement.file(data), offsets, null);
    }

    /** Spark's index file: numPartitions + 1 big-endian offsets from 0, non-decreasing (the registry checks the order). */
    static long[] readIndex(Path index, byte[] bytes) throws IOException {
        if (bytes.length < 16 || bytes.length % 8 != 0) {
            throw new IOException(index + " has " + bytes.length + " bytes: not a shuffle index (numPartitions + 1 longs)");
        }
        long[] offsets = new long[bytes.length / 8];
        java.nio.ByteBuffer.wrap(bytes).asLongBuffer().get(offsets);
        return offsets;
    }

    /** Files not where Spark's hashing puts them for the application's number of dirs, so searched for in every sub dir. */
    public long searches() {
        return searches.get();
    }

    /** Map outputs found and handed to the registry so far. */
    public long resolved() {
        return resolved.get();
    }
}
