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
import java.nio.file.Path;

/**
 * open(2) and close(2) through the FFM API: Java's own file opening cannot ask for O_NONBLOCK (a FIFO
 * would block the opening thread until a writer came) nor hand out the descriptor, whose
 * {@code /proc/self/fd} entry is how {@link ConfinedFiles} checks the inode it opened rather than a
 * name someone may have swapped since.
 */
final class NoFollowOpen {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle OPEN = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("open"),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT),
            Linker.Option.firstVariadicArg(2), Linker.Option.captureCallState("errno"));
    private static final MethodHandle CLOSE = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("close"),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT));

    // Linux (asm-generic and x86) values.
    private static final int O_RDONLY = 0;
    private static final int O_NONBLOCK = 04000;
    private static final int O_NOFOLLOW = 0400000;
    private static final int O_CLOEXEC = 02000000;
    private static final int ELOOP = 40;
    private static final int ENOENT = 2;

    private NoFollowOpen() {
    }

    /**
     * Opens {@code file} read-only without following a symbolic link as its last component and
     * without blocking on a FIFO; returns the descriptor, to be given to {@link #close(int)}.
     */
    static int open(Path file) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            int fd = (int) OPEN.invokeExact(state, arena.allocateFrom(file.toString()),
                    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
            if (fd >= 0) {
                return fd;
            }
            int errno = (int) ERRNO.get(state, 0L);
            if (errno == ELOOP) {
                throw new RefusedFileException(file + " is a symbolic link");
            }
            if (errno == ENOENT) {
                throw new java.nio.file.NoSuchFileException(file.toString());
            }
            throw new IOException("open(" + file + ", O_NOFOLLOW) failed: errno " + errno);
        } catch (IOException e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException("open(" + file + "): downcall failed: " + t, t);
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
