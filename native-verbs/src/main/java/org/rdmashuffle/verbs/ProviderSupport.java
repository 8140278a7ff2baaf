package org.rdmashuffle.verbs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;

/**
 * What every provider's {@link ProtectionDomain} does the same way around its own registration
 * call: the argument checks, and regions that own their memory (an allocation or a file mapping)
 * whose arena is closed if registration fails; and the checks of a window's bind. Not for applications.
 */
public final class ProviderSupport {

    /** A provider's registration of memory the region will own (and free after deregistering). */
    @FunctionalInterface
    public interface OwnedRegistration {
        MemoryRegion register(MemorySegment memory, Arena owner);
    }

    private ProviderSupport() {
    }

    /**
     * The checks verbs.h's inline {@code ibv_bind_mw} makes before calling the provider: a type 1
     * window (EINVAL, naming the posted request type 2 windows take instead), an unbind without a
     * range (EINVAL), a region of the window's protection domain (EPERM, {@code samePd} false).
     */
    public static void checkWindowBind(int qpNumber, MemoryWindow window, MemoryRegion region, long address, long length,
                                       boolean samePd) {
        String call = "ibv_bind_mw";
        if (window.type() != MemoryWindowType.TYPE_1) {
            throw new VerbsException(call, Errno.EINVAL, "QP " + qpNumber + ": " + window.type()
                    + " windows are bound by a posted work request (SendWorkRequest.bindWindow), not ibv_bind_mw");
        }
        if (region == null && (address != 0 || length != 0)) {
            throw new VerbsException(call, Errno.EINVAL, "QP " + qpNumber + ": an unbind (no region) has address and length 0");
        }
        if (region != null && !samePd) {
            throw new VerbsException(call, Errno.EPERM, "QP " + qpNumber + ": the region is not of the window's protection domain");
        }
    }

    /** Refuses memory no device can register: heap segments and empty ones. */
    public static void checkRegistrable(MemorySegment memory) {
        if (!memory.isNative()) {
            throw new IllegalArgumentException("only native memory can be registered, not a heap segment");
        }
        if (memory.byteSize() == 0) {
            throw new IllegalArgumentException("cannot register an empty segment");
        }
    }

    /** Page-aligned native memory of {@code bytes}, registered; the arena is closed if registration fails. */
    public static MemoryRegion allocateAndRegister(long bytes, OwnedRegistration registration) {
        Arena arena = Arena.ofShared();
        try {
            return registration.register(arena.allocate(bytes, 4096), arena);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /** The mapping a region with {@code access} needs: read-only unless anyone may write through it. */
    public static FileChannel.MapMode mapModeFor(int access) {
        return (access & (Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) != 0
                ? FileChannel.MapMode.READ_WRITE : FileChannel.MapMode.READ_ONLY;
    }

    /** Maps {@code length} bytes of {@code file} from {@code offset} and registers the mapping; unmaps if that fails. */
    public static MemoryRegion mapAndRegister(FileChannel file, FileChannel.MapMode mode, long offset, long length,
                                              OwnedRegistration registration) {
        Arena arena = Arena.ofShared();
        try {
            return registration.register(file.map(mode, offset, length, arena), arena);
        } catch (IOException e) {
            arena.close();
            throw new UncheckedIOException("mapping " + length + " bytes at offset " + offset + " for registration failed", e);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }
}
