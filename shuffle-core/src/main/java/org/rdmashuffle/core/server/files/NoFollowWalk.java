package org.rdmashuffle.core.server.files;

import static org.rdmashuffle.core.server.files.NoFollowOpen.AT_FDCWD;
import static org.rdmashuffle.core.server.files.NoFollowOpen.ELOOP;
import static org.rdmashuffle.core.server.files.NoFollowOpen.ENOENT;
import static org.rdmashuffle.core.server.files.NoFollowOpen.ENOTDIR;
import static org.rdmashuffle.core.server.files.NoFollowOpen.O_CLOEXEC;
import static org.rdmashuffle.core.server.files.NoFollowOpen.O_DIRECTORY;
import static org.rdmashuffle.core.server.files.NoFollowOpen.O_NOFOLLOW;
import static org.rdmashuffle.core.server.files.NoFollowOpen.O_NONBLOCK;
import static org.rdmashuffle.core.server.files.NoFollowOpen.O_PATH;
import static org.rdmashuffle.core.server.files.NoFollowOpen.O_RDONLY;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * Reaches what an absolute path names one name at a time from "/", each step an openat(2) with
 * {@code O_NOFOLLOW} relative to the directory the previous step opened. So no symbolic link anywhere
 * on the path is followed: what lies behind one is never looked up, not even whether it exists (a link
 * is refused alike whether its target exists, is missing or hangs on a dead mount), and a name swapped
 * for a link between two steps is met as a link, not followed. The kernel's own resolution of a whole
 * path (open(2) with {@code O_NOFOLLOW}) spares only the last name.
 *
 * <p>Directories on the way are held as {@code O_PATH} descriptors: they need only the search
 * permission an open by full path needs, and nothing is opened in them. Every descriptor but the one
 * returned is closed. Errors name the path, for the node's log.
 */
final class NoFollowWalk {
    /** A directory stepped through: never a link, never opened for reading. */
    private static final int THROUGH = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    /** The file at the end: never a link, and a FIFO does not block the opening thread. */
    private static final int READ = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    /** A name looked up, nothing opened: whatever it is, a link included (not followed). */
    private static final int NAME_ONLY = O_PATH | O_NOFOLLOW | O_CLOEXEC;

    private NoFollowWalk() {
    }

    /**
     * An {@code O_PATH} descriptor of directory {@code dir} (for {@link NoFollowOpen#close}): usable as
     * an openat(2) base and, through {@code /proc/self/fd}, to list the very directory reached.
     *
     * @throws RefusedFileException if a component is a symbolic link, or the path is not absolute and normal
     * @throws NoSuchFileException if a component is missing
     * @throws NotDirectoryException if a component is something else than a directory or a link
     */
    static int openDirectory(Path dir) throws IOException {
        Path path = absoluteAndNormal(dir);
        int fd = NoFollowOpen.openat(AT_FDCWD, "/", THROUGH);
        if (fd < 0) {
            throw new IOException("open(/) failed: errno " + -fd);
        }
        for (int i = 0; i < path.getNameCount(); i++) {
            int parent = fd;
            try {
                String name = path.getName(i).toString();
                fd = NoFollowOpen.openat(parent, name, THROUGH);
                if (fd < 0) {
                    throw failure(path.getRoot().resolve(path.subpath(0, i + 1)), parent, name, -fd);
                }
            } finally {
                NoFollowOpen.close(parent);
            }
        }
        return fd;
    }

    /**
     * A read-only descriptor of {@code file}, reached as {@link #openDirectory} reaches a directory;
     * itself not a link ({@link RefusedFileException}) and, if a FIFO, opened without blocking.
     */
    static int openFile(Path file) throws IOException {
        Path path = absoluteAndNormal(file);
        String name = nameOf(path);
        int parent = openDirectory(path.getParent());
        try {
            int fd = NoFollowOpen.openat(parent, name, READ);
            if (fd < 0) {
                throw failure(path, parent, name, -fd);
            }
            return fd;
        } finally {
            NoFollowOpen.close(parent);
        }
    }

    /**
     * Whether {@code file}'s directory is reached without a link and holds an entry of its name. The
     * entry is neither followed nor opened: a link or a FIFO there counts (and {@link #openFile} refuses
     * it); a missing or linked directory on the way means absent.
     */
    static boolean hasEntry(Path file) throws IOException {
        Path path = absoluteAndNormal(file);
        String name = nameOf(path);
        int parent;
        try {
            parent = openDirectory(path.getParent());
        } catch (NoSuchFileException | NotDirectoryException | RefusedFileException unreachable) {
            return false;
        }
        try {
            int fd = NoFollowOpen.openat(parent, name, NAME_ONLY);
            if (fd >= 0) {
                NoFollowOpen.close(fd);
                return true;
            }
            if (-fd == ENOENT || -fd == ENOTDIR) {
                return false;
            }
            throw failure(path, parent, name, -fd);
        } finally {
            NoFollowOpen.close(parent);
        }
    }

    /** What openat(2) of {@code name} in {@code parent} (which is {@code path}) failing with {@code errno} means. */
    private static IOException failure(Path path, int parent, String name, int errno) {
        if (errno == ENOENT) {
            return new NoSuchFileException(path.toString());
        }
        if (errno == ENOTDIR || errno == ELOOP) { // O_DIRECTORY meets a link as ENOTDIR, a plain O_NOFOLLOW as ELOOP
            return isLink(parent, name) ? new RefusedFileException(path + " is a symbolic link")
                    : new NotDirectoryException(path.toString());
        }
        return new IOException("openat(" + path + ", O_NOFOLLOW) failed: errno " + errno);
    }

    /** Whether {@code name} in the directory open as {@code parent} is a link: lstat(2) of it, never following it. */
    private static boolean isLink(int parent, String name) {
        try {
            return Files.readAttributes(Path.of("/proc/self/fd/" + parent, name), BasicFileAttributes.class,
                    LinkOption.NOFOLLOW_LINKS).isSymbolicLink();
        } catch (IOException gone) {
            return false;
        }
    }

    /** {@code path} if absolute with no "." nor ".." (each name is a step, and ".." would step out). */
    private static Path absoluteAndNormal(Path path) throws RefusedFileException {
        if (!path.isAbsolute() || !path.equals(path.normalize())) {
            throw new RefusedFileException(path + " is not an absolute path without '.' or '..'");
        }
        return path;
    }

    private static String nameOf(Path path) throws RefusedFileException {
        if (path.getFileName() == null) {
            throw new RefusedFileException(path + " names no file");
        }
        return path.getFileName().toString();
    }
}
