package org.rdmashuffle.core.service;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Predicate;

import org.rdmashuffle.core.server.MapOutputRegistry;
import org.rdmashuffle.core.server.files.Confinement;
import org.rdmashuffle.core.server.files.RefusedFileException;

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
 * found by searching every sub dir named by two lowercase hex digits, which {@link #searches()} counts.
 *
 * <p>The application owns everything searched, so the search trusts none of it: it follows no link (a
 * linked {@code blockmgr-*} or sub dir is not searched, whatever it leads to, so the answer never
 * depends on what lies outside the application's directories) and is bounded (at most
 * {@value #MAX_MANAGERS} {@code blockmgr-*} dirs per application directory and {@value #MAX_SUB_DIRS}
 * sub dirs per {@code blockmgr-*} dir are searched, at most {@value #MAX_SCANNED} entries read from any
 * one directory; {@link #scanned()} counts entries read). Only the directories the service itself
 * names for an authenticated application are searched; a reducer names nothing but the shuffle and map
 * ids. Index and data files are opened within the application's {@link Confinement} (no link followed,
 * inside its directories, owner checked when security is on); an index is bounded before it is read.
 * Spark-free (it runs in a NodeManager).
 */
public final class SparkOutputFiles implements MapOutputRegistry.Resolver {
    private static final System.Logger LOG = System.getLogger(SparkOutputFiles.class.getName());

    /** Spark's default {@code spark.diskStore.subDirectories}. */
    static final int SUB_DIRS_PER_LOCAL_DIR = 64;
    /** {@code blockmgr-*} dirs searched per application directory: one per executor that ran on the node. */
    static final int MAX_MANAGERS = 256;
    /** Sub dirs searched per {@code blockmgr-*} dir: as many as Spark's default makes. */
    static final int MAX_SUB_DIRS = SUB_DIRS_PER_LOCAL_DIR;
    /** Entries read from any one directory searched: a tenant may create millions. */
    static final int MAX_SCANNED = 4096;

    private final Function<String, Confinement> applications;
    private final AtomicLong resolved = new AtomicLong();
    private final AtomicLong searches = new AtomicLong();
    private final AtomicLong scanned = new AtomicLong();
    private final AtomicBoolean warnedOfBound = new AtomicBoolean();

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
        List<Path> managers = new ArrayList<>();
        for (Path root : roots) {
            for (String manager : list(confinement, root, n -> n.startsWith("blockmgr-"), MAX_MANAGERS)) {
                managers.add(root.resolve(manager));
            }
        }
        Path index = find(confinement, managers, roots.size(), name + ".index");
        if (index == null) {
            LOG.log(System.Logger.Level.DEBUG, () -> "no " + name + " of " + app + " on this node");
            return null;
        }
        // The data file may hash into another of the executor's local dirs than its index.
        return read(confinement, index, find(confinement, managers, roots.size(), name + ".data"));
    }

    /**
     * {@code fileName} in one of {@code managers}' sub dirs: where Spark would have put it first, then
     * anywhere; or null. Present means an entry of that name, not followed ({@link Confinement#exists}):
     * a link or FIFO planted as the file is found here and refused when opened.
     */
    private Path find(Confinement confinement, List<Path> managers, int localDirs, String fileName) throws IOException {
        String expected = subDirOf(fileName, Math.max(1, localDirs));
        for (Path manager : managers) {
            Path file = manager.resolve(expected).resolve(fileName);
            if (confinement.exists(file)) {
                return file;
            }
        }
        searches.incrementAndGet();
        for (Path manager : managers) {
            for (String sub : list(confinement, manager, SparkOutputFiles::isSubDirName, MAX_SUB_DIRS)) {
                Path file = manager.resolve(sub).resolve(fileName);
                if (confinement.exists(file)) {
                    return file;
                }
            }
        }
        return null;
    }

    /**
     * Up to {@code maxNames} names {@code wanted} in {@code dir}, from at most {@link #MAX_SCANNED}
     * entries; none if {@code dir} is gone, a link or no directory (it is then not searched).
     */
    private List<String> list(Confinement confinement, Path dir, Predicate<String> wanted, int maxNames) throws IOException {
        Confinement.Listing listing;
        try {
            listing = confinement.list(dir, wanted, maxNames, MAX_SCANNED);
        } catch (NoSuchFileException | NotDirectoryException | RefusedFileException notSearched) {
            LOG.log(System.Logger.Level.DEBUG, () -> "not searched: " + notSearched.getMessage());
            return List.of();
        }
        scanned.addAndGet(listing.scanned());
        if (listing.truncated() && warnedOfBound.compareAndSet(false, true)) {
            LOG.log(System.Logger.Level.WARNING, "searched only " + listing.names().size() + " of the entries of " + dir
                    + " (bounds: " + maxNames + " names, " + MAX_SCANNED + " entries read); outputs beyond are not"
                    + " found. Logged once.");
        }
        return listing.names();
    }

    /** A sub dir of a {@code blockmgr-*} dir as Spark names them: two lowercase hex digits ({@code %02x}). */
    static boolean isSubDirName(String name) {
        return name.length() == 2 && isLowerHex(name.charAt(0)) && isLowerHex(name.charAt(1));
    }

    private static boolean isLowerHex(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
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

    /** Directory entries read by the searches so far (each directory read at most {@value #MAX_SCANNED}). */
    public long scanned() {
        return scanned.get();
    }

    /** Map outputs found and handed to the registry so far. */
    public long resolved() {
        return resolved.get();
    }
}
