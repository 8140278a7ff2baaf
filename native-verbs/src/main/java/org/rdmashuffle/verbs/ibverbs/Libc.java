package org.rdmashuffle.verbs.ibverbs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;

import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.VerbsException;

/**
 * The few libc calls the provider needs: {@code poll} to wait on a completion channel or the
 * async-event fd with a timeout (so shutdown never hangs), {@code fcntl} to make those fds
 * non-blocking, an {@code eventfd} polled beside them so a waiter can be woken at once (and so sleep
 * long), and {@code getrlimit} for the memlock limit.
 */
final class Libc {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle POLL = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("poll"),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT), Linker.Option.captureCallState("errno"));
    private static final MethodHandle FCNTL = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("fcntl"),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT),
            Linker.Option.firstVariadicArg(2), Linker.Option.captureCallState("errno"));
    private static final MethodHandle GETRLIMIT = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("getrlimit"),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS), Linker.Option.captureCallState("errno"));

    private static final MethodHandle EVENTFD = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("eventfd"),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT), Linker.Option.captureCallState("errno"));
    private static final MethodHandle READ = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("read"),
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle WRITE = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("write"),
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle CLOSE = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("close"),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final int EFD_NONBLOCK = 04000;
    private static final int EFD_CLOEXEC = 02000000;

    /** struct pollfd { int fd; short events; short revents; }. */
    private static final StructLayout POLLFD = MemoryLayout.structLayout(
            JAVA_INT.withName("fd"), JAVA_SHORT.withName("events"), JAVA_SHORT.withName("revents"));
    private static final short POLLIN = 1;
    private static final int F_GETFL = 3;
    private static final int F_SETFL = 4;
    private static final int O_NONBLOCK = 04000;
    private static final int RLIMIT_MEMLOCK = 8;
    /** RLIM_INFINITY. */
    static final long UNLIMITED = -1L;

    private Libc() {
    }

    /** What {@link #awaitReadable} saw. */
    enum Readable { NONE, FD, WAKE_UP }

    /**
     * Waits up to {@code timeoutMillis} for {@code fd} to become readable or {@code wakeFd} (an
     * eventfd) to be signalled; a signal is consumed and wins over the fd (which, level-triggered,
     * is seen again by the next wait).
     */
    static Readable awaitReadable(int fd, int wakeFd, int timeoutMillis) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = Libibverbs.allocateCaptureState(arena);
            MemorySegment pfds = arena.allocate(POLLFD, 2);
            pfds.set(JAVA_INT, 0, fd);
            pfds.set(JAVA_SHORT, 4, POLLIN);
            pfds.set(JAVA_INT, 8, wakeFd);
            pfds.set(JAVA_SHORT, 12, POLLIN);
            int rc = (int) POLL.invokeExact(state, pfds, 2L, timeoutMillis);
            if (rc < 0) {
                int errno = Libibverbs.errno(state);
                if (errno == Errno.EINTR) {
                    return Readable.NONE;
                }
                throw new VerbsException("poll(fd " + fd + ", eventfd " + wakeFd + ")", errno, null);
            }
            if (rc == 0) {
                return Readable.NONE;
            }
            if (pfds.get(JAVA_SHORT, 14) != 0) {
                MemorySegment count = arena.allocate(JAVA_LONG);
                long n = (long) READ.invokeExact(wakeFd, count, 8L); // non-blocking: EAGAIN if another waiter drained it
                return Readable.WAKE_UP;
            }
            return Readable.FD;
        } catch (VerbsException e) {
            throw e;
        } catch (Throwable t) {
            throw new VerbsException("poll", "downcall failed: " + t);
        }
    }

    /** A non-blocking, close-on-exec eventfd for {@link #awaitReadable}'s wake-ups. */
    static int eventFd() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = Libibverbs.allocateCaptureState(arena);
            int fd = (int) EVENTFD.invokeExact(state, 0, EFD_NONBLOCK | EFD_CLOEXEC);
            if (fd < 0) {
                throw new VerbsException("eventfd", Libibverbs.errno(state), null);
            }
            return fd;
        } catch (VerbsException e) {
            throw e;
        } catch (Throwable t) {
            throw new VerbsException("eventfd", "downcall failed: " + t);
        }
    }

    /** Signals an eventfd (adds 1; a full counter, EAGAIN, still leaves it readable). */
    static void signal(int eventFd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment one = arena.allocate(JAVA_LONG);
            one.set(JAVA_LONG, 0, 1L);
            long n = (long) WRITE.invokeExact(eventFd, one, 8L);
        } catch (Throwable t) {
            throw new VerbsException("write(eventfd)", "downcall failed: " + t);
        }
    }

    /** Closes a file descriptor this provider opened itself. */
    static void close(int fd) {
        try {
            int rc = (int) CLOSE.invokeExact(fd);
        } catch (Throwable t) {
            throw new VerbsException("close(fd " + fd + ")", "downcall failed: " + t);
        }
    }

    /** Sets O_NONBLOCK on {@code fd}, so a read after a spurious wakeup returns EAGAIN instead of blocking. */
    static void setNonBlocking(int fd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = Libibverbs.allocateCaptureState(arena);
            int flags = (int) FCNTL.invokeExact(state, fd, F_GETFL, 0);
            if (flags < 0 || (int) FCNTL.invokeExact(state, fd, F_SETFL, flags | O_NONBLOCK) < 0) {
                throw new VerbsException("fcntl(fd " + fd + ", O_NONBLOCK)", Libibverbs.errno(state), null);
            }
        } catch (VerbsException e) {
            throw e;
        } catch (Throwable t) {
            throw new VerbsException("fcntl", "downcall failed: " + t);
        }
    }

    /** The soft memlock limit in bytes, or {@link #UNLIMITED}. */
    static long memlockLimit() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = Libibverbs.allocateCaptureState(arena);
            MemorySegment rlimit = arena.allocate(16, 8);
            if ((int) GETRLIMIT.invokeExact(state, RLIMIT_MEMLOCK, rlimit) != 0) {
                throw new VerbsException("getrlimit(RLIMIT_MEMLOCK)", Libibverbs.errno(state), null);
            }
            return rlimit.get(JAVA_LONG, 0);
        } catch (VerbsException e) {
            throw e;
        } catch (Throwable t) {
            throw new VerbsException("getrlimit", "downcall failed: " + t);
        }
    }
}
