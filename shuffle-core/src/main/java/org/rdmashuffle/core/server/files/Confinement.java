package org.rdmashuffle.core.server.files;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.Predicate;

/**
 * Where one application's map outputs may be opened and searched for on this node, and whose they must
 * be: the serving side's answer to a tenant that plants a symbolic link, a FIFO, a hard link, a huge
 * index or a flood of entries among its outputs. Stricter than Hadoop's ShuffleHandler
 * ({@code SecureIOUtils.openForRandomRead}), which checks the owner only:
 * <ol>
 *   <li>a path must lie below one of the application's directories, and is reached one name at a time
 *       without following a symbolic link anywhere ({@link NoFollowWalk}): a link on the way, or as the
 *       file itself, is refused alike whether or not its target exists, so what lies behind it is never
 *       looked up (no existence oracle into other directories, no hang on a dead mount); the file is
 *       opened with {@code O_NONBLOCK}, so a FIFO cannot block the opening thread;</li>
 *   <li>the inode opened is then examined through its {@code /proc/self/fd} entry, never by name again
 *       (a name can be swapped between a check and an open): it must be a regular file, owned by the
 *       application's user when an owner is given, and really lie in one of the application's
 *       directories;</li>
 *   <li>the channel handed out is reopened from that entry, so it is the inode checked.</li>
 * </ol>
 * Searches go through the same walk: {@link #exists} looks up a name without following it, and
 * {@link #list} reads a directory reached so, a bounded number of entries. Errors are
 * {@link RefusedFileException}s (or other {@link IOException}s) naming the path: for the node's log only.
 */
public final class Confinement {
    /**
     * The largest index file read: 8 MiB, a million partitions in Spark's format (8 bytes each), some
     * 350,000 in MapReduce's (24). An index is read whole into the heap; a tenant must not choose how much.
     */
    public static final int MAX_INDEX_BYTES = 8 << 20;

    private final List<Path> realDirs;
    private final String owner;

    /**
     * @param realDirs the application's directories, canonical (see {@link #applicationDir})
     * @param owner the user who must own every file, or null not to check (as Hadoop does without
     *        security, when containers run as the NodeManager's own user and could read its files anyway)
     */
    public Confinement(List<Path> realDirs, String owner) {
        this.realDirs = List.copyOf(realDirs);
        this.owner = owner;
    }

    /**
     * The canonical path of an application's directory {@code relative} below {@code trustedBase}, a
     * directory the operator configured (a NodeManager local dir, whose own path may contain links).
     * No component of {@code relative} may be a link, and none is followed to find out: an application
     * owns its directories and could replace one with a link to anywhere.
     *
     * @throws RefusedFileException if a component is a link, or {@code relative} leads out of the base
     * @throws java.nio.file.NoSuchFileException if the directory is missing
     */
    public static Path applicationDir(Path trustedBase, String relative) throws IOException {
        Path rel = Path.of(relative).normalize();
        if (rel.isAbsolute() || rel.startsWith("..") || rel.toString().isEmpty()) {
            throw new RefusedFileException("'" + relative + "' is not a directory below " + trustedBase);
        }
        Path dir = trustedBase.toRealPath().resolve(rel);
        NoFollowOpen.close(NoFollowWalk.openDirectory(dir)); // reached without a link: canonical
        return dir;
    }

    /**
     * As {@link #applicationDir(Path, String)} for {@code full}, a path a NodeManager handed out for
     * {@code relative} below one of its local dirs: that local dir is what precedes {@code relative}.
     */
    public static Path applicationDirAt(Path full, String relative) throws IOException {
        Path rel = Path.of(relative).normalize();
        Path path = full.normalize();
        int base = path.getNameCount() - rel.getNameCount();
        if (base < 1 || !path.endsWith(rel) || path.getRoot() == null) {
            throw new RefusedFileException(full + " is not '" + relative + "' below a local dir");
        }
        return applicationDir(path.getRoot().resolve(path.subpath(0, base)), relative);
    }

    /** The application's directories, canonical. */
    public List<Path> dirs() {
        return realDirs;
    }

    /** The user files must belong to, or null. */
    public String owner() {
        return owner;
    }

    /** Opens {@code file} as the class describes; read-write if {@code writable} and permitted. */
    public FileChannel open(Path file, boolean writable) throws IOException {
        int fd = NoFollowWalk.openFile(below(file, false));
        try {
            Path opened = Path.of("/proc/self/fd/" + fd);
            check(file, opened);
            if (writable) {
                try {
                    return FileChannel.open(opened, StandardOpenOption.READ, StandardOpenOption.WRITE);
                } catch (IOException readOnly) {
                    // a NodeManager reading what containers wrote as another user
                }
            }
            return FileChannel.open(opened, StandardOpenOption.READ);
        } finally {
            NoFollowOpen.close(fd);
        }
    }

    /**
     * Whether {@code file}, below one of the application's directories, is there: its directory reached
     * without following a link, and an entry of its name in it. The entry is not followed nor opened: a
     * link or FIFO there counts as present, and {@link #open} refuses it; a linked or missing directory
     * on the way counts as absent, whatever the link leads to.
     */
    public boolean exists(Path file) throws IOException {
        return NoFollowWalk.hasEntry(below(file, false));
    }

    /**
     * Names in {@code dir} (one of the application's directories, or below one) that {@code wanted}
     * accepts: at most {@code maxNames}, from at most {@code maxScanned} entries read, in the order the
     * directory yields them. The directory is reached without following a link and read through the
     * {@code /proc/self/fd} entry of the inode reached; its entries are only named, never followed.
     *
     * @throws RefusedFileException if {@code dir} or a directory on the way is a link
     */
    public Listing list(Path dir, Predicate<String> wanted, int maxNames, int maxScanned) throws IOException {
        int fd = NoFollowWalk.openDirectory(below(dir, true));
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(Path.of("/proc/self/fd/" + fd))) {
            List<String> names = new ArrayList<>();
            int scanned = 0;
            for (Iterator<Path> it = entries.iterator(); it.hasNext(); ) {
                if (scanned == maxScanned || names.size() == maxNames) {
                    return new Listing(names, scanned, true);
                }
                String name = it.next().getFileName().toString();
                scanned++;
                if (wanted.test(name)) {
                    names.add(name);
                }
            }
            return new Listing(names, scanned, false);
        } finally {
            NoFollowOpen.close(fd);
        }
    }

    /**
     * What {@link #list} found.
     *
     * @param names the names accepted
     * @param scanned the entries read
     * @param truncated whether a bound stopped the reading before the directory's end
     */
    public record Listing(List<String> names, int scanned, boolean truncated) {
        public Listing {
            names = List.copyOf(names);
        }
    }

    /**
     * The whole of a small file (an index): refused, before anything is allocated, if larger than
     * {@code maxBytes}.
     */
    public byte[] readAll(Path file, int maxBytes) throws IOException {
        try (FileChannel ch = open(file, false)) {
            long size = ch.size();
            if (size > maxBytes) {
                throw new RefusedFileException(file + " has " + size + " bytes, more than the " + maxBytes
                        + " an index may have");
            }
            ByteBuffer buf = ByteBuffer.allocate((int) size);
            while (buf.hasRemaining() && ch.read(buf) >= 0) {
                // read on
            }
            if (buf.hasRemaining()) {
                throw new IOException(file + " shrank while it was read");
            }
            return buf.array();
        }
    }

    /**
     * {@code path}, refused unless it lies below one of the application's directories (or is one, if
     * {@code orDirItself}). Compared as given: a path with ".." is refused later, by the walk.
     */
    private Path below(Path path, boolean orDirItself) throws RefusedFileException {
        for (Path dir : realDirs) {
            if (path.startsWith(dir) && (orDirItself || !path.equals(dir))) {
                return path;
            }
        }
        throw new RefusedFileException(path + " lies outside the application's directories");
    }

    /** The checks of step 2 on the inode behind {@code opened} (a /proc/self/fd entry), opened as {@code file}. */
    private void check(Path file, Path opened) throws IOException {
        PosixFileAttributes a = Files.readAttributes(opened, PosixFileAttributes.class); // follows the entry to the inode
        if (!a.isRegularFile()) {
            throw new RefusedFileException(file + " is not a regular file");
        }
        if (owner != null && !a.owner().getName().equals(owner)) {
            throw new RefusedFileException(file + " is owned by " + a.owner().getName() + ", not by " + owner
                    + ", the application's user");
        }
        // Already below by name with no link on the way; the inode's own path also covers a tree mounted over.
        Path real = Files.readSymbolicLink(opened);
        for (Path dir : realDirs) {
            if (real.startsWith(dir) && !real.equals(dir)) {
                return;
            }
        }
        throw new RefusedFileException(file + " lies outside the application's directories (it is " + real + ")");
    }

    /** An application's data file, opened within this confinement. */
    public OutputFile file(Path file) {
        return new OutputFile(file, this::open);
    }
}
