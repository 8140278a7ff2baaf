package org.rdmashuffle.core.server.files;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.util.List;

/**
 * Where one application's map outputs may be opened on this node, and whose they must be: the
 * serving side's answer to a tenant that plants a symbolic link, a FIFO, a hard link or a huge index
 * among its outputs. Stricter than Hadoop's ShuffleHandler ({@code SecureIOUtils.openForRandomRead}),
 * which checks the owner only:
 * <ol>
 *   <li>open(2) with {@code O_NOFOLLOW | O_NONBLOCK}: a link as the file itself is refused, a FIFO
 *       cannot block the opening thread;</li>
 *   <li>the inode opened is then examined through its {@code /proc/self/fd} entry, never by name again
 *       (a name can be swapped between a check and an open): it must be a regular file, owned by the
 *       application's user when an owner is given, and really lie in one of the application's
 *       directories (a linked directory on the way is resolved here, and refused if it leads out);</li>
 *   <li>the channel handed out is reopened from that entry, so it is the inode checked.</li>
 * </ol>
 * Errors are {@link RefusedFileException}s naming the path: for the node's log only.
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
     * No component of {@code relative} may be a link: an application owns its directories and could
     * replace one with a link to anywhere.
     */
    public static Path applicationDir(Path trustedBase, String relative) throws IOException {
        Path rel = Path.of(relative).normalize();
        if (rel.isAbsolute() || rel.startsWith("..") || rel.toString().isEmpty()) {
            throw new RefusedFileException("'" + relative + "' is not a directory below " + trustedBase);
        }
        Path expected = trustedBase.toRealPath().resolve(rel);
        Path real = expected.toRealPath();
        if (!real.equals(expected)) {
            throw new RefusedFileException(expected + " is, or runs through, a symbolic link (to " + real + ")");
        }
        return real;
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
        int fd = NoFollowOpen.open(file);
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
