package org.rdmashuffle.core.server.files;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * openat(2) and close(2) through the FFM API: Java's own file opening cannot open one name relative
 * to a directory already opened (how {@link NoFollowWalk} steps through a path without the kernel
 * resolving, and following, the rest of it), ask for {@code O_NONBLOCK} (a FIFO would block the
 * opening thread until a writer came) nor hand out the descriptor, whose {@code /proc/self/fd} entry
 * is how {@link Confinement} examines the inode it opened rather than a name someone may have swapped
 * since. Flag and errno values are Linux's (x86_64 and aarch64 share them).
 */
final class NoFollowOpen {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle OPENAT = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("openat"),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT),
            Linker.Option.firstVariadicArg(3), Linker.Option.captureCallState("errno"));
    private static final MethodHandle CLOSE = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("close"),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT));

    /** The {@code dirfd} that makes openat(2) resolve a relative name from the working directory (ignored for "/"). */
    static final int AT_FDCWD = -100;
    static final int O_RDONLY = 0;
    static final int O_NONBLOCK = 04000;
    static final int O_DIRECTORY = 0200000;
    static final int O_NOFOLLOW = 0400000;
    static final int O_CLOEXEC = 02000000;
    /** A descriptor that only names an inode (no read permission needed, nothing opened): for directories walked through. */
    static final int O_PATH = 010000000;
    static final int ENOENT = 2;
    static final int ENOTDIR = 20;
    static final int ELOOP = 40;

    private NoFollowOpen() {
    }

    /**
     * openat(2) of {@code name} relative to the directory {@code dirfd} with {@code flags}: the new
     * descriptor (for {@link #close(int)}), or minus the errno it failed with. An errno, not an
     * exception: a search meets "no such file" far more often than a file.
     */
    static int openat(int dirfd, String name, int flags) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            int fd = (int) OPENAT.invokeExact(state, dirfd, arena.allocateFrom(name), flags, 0);
            return fd >= 0 ? fd : -(int) ERRNO.get(state, 0L);
        } catch (Throwable t) {
            throw new IOException("openat(" + dirfd + ", " + name + "): downcall failed: " + t, t);
        }
    }

    static void close(int fd) {
        try {
            int ignored = (int) CLOSE.invokeExact(fd);
        } catch (Throwable t) {
            throw new IllegalStateException("close(" + fd + "): downcall failed", t);
        }
    }
}
