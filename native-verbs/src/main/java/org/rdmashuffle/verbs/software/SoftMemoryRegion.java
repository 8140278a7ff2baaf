package org.rdmashuffle.verbs.software;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.util.concurrent.atomic.AtomicBoolean;

import org.rdmashuffle.verbs.MemoryRegion;

/**
 * Registered memory of the software provider: a segment, its keys, and the PD it belongs to; for a
 * file registered read-only ({@link SoftProtectionDomain#registerOwnedFile}), also the file, which
 * reads are answered from.
 */
final class SoftMemoryRegion implements MemoryRegion {
    final SoftProtectionDomain pd;
    private final MemorySegment memory;
    private final int key;
    private final int access;
    private final Arena owned;
    /** The file the memory maps, from {@code fileOffset}, when the region owns it; else null. */
    private final FileChannel file;
    private final long fileOffset;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Memory windows bound to it now: while any is, it cannot be deregistered (IBA 10.6.7.2.6; rxe: EINVAL). */
    final java.util.concurrent.atomic.AtomicInteger windowsBound = new java.util.concurrent.atomic.AtomicInteger();

    SoftMemoryRegion(SoftProtectionDomain pd, MemorySegment memory, int key, int access, Arena owned, FileChannel file,
                     long fileOffset) {
        this.pd = pd;
        this.memory = memory;
        this.key = key;
        this.access = access;
        this.owned = owned;
        this.file = file;
        this.fileOffset = fileOffset;
    }

    /** The file behind this memory, or null (not a file, or one the region does not own). */
    FileChannel file() {
        return file;
    }

    /** Where in {@link #file()} the byte at {@code address} (inside this region) is. */
    long filePositionOf(long address) {
        return fileOffset + (address - memory.address());
    }

    @Override
    public MemorySegment segment() {
        return memory;
    }

    /** The region's key: what a window's bind request names it by. */
    @Override
    public long handle() {
        return Integer.toUnsignedLong(key);
    }

    /** One unpredictable key serves as both lkey and rkey, as on many HCAs. */
    @Override
    public int lkey() {
        return key;
    }

    @Override
    public int rkey() {
        return key;
    }

    @Override
    public int access() {
        return access;
    }

    /** The slice {@code [address, address + length)} if it lies inside this region, else null. */
    MemorySegment slice(long address, long length) {
        long offset = offsetOf(address, length);
        return offset < 0 ? null : memory.asSlice(offset, length);
    }

    /** Where {@code [address, address + length)} starts in this region's memory if it lies inside it, else -1. */
    long offsetOf(long address, long length) {
        long offset = address - memory.address();
        if (offset < 0 || length < 0 || offset > memory.byteSize() - length) {
            return -1;
        }
        return offset;
    }

    boolean isClosed() {
        return closed.get();
    }

    @Override
    public void close() {
        int bound = windowsBound.get();
        if (bound > 0 && !closed.get()) {
            throw new org.rdmashuffle.verbs.VerbsException("ibv_dereg_mr", org.rdmashuffle.verbs.Errno.EINVAL, bound
                    + " memory window(s) are bound to " + this + ": invalidate or deallocate them first (as rxe refuses)");
        }
        if (closed.compareAndSet(false, true)) {
            pd.context.deregister(this);
            try {
                if (owned != null) {
                    closeWhenIdle(owned);
                }
            } finally {
                if (file != null) {
                    try {
                        file.close(); // an answer still queued fails its link, as one from the unmapped memory would
                    } catch (IOException ignored) {
                        // closing anyway
                    }
                }
            }
        }
    }

    /**
     * A remote access already admitted may still be copying this memory to or from a socket; the
     * arena refuses to close while it does. New accesses are refused (the key is gone), so wait briefly.
     */
    private static void closeWhenIdle(Arena arena) {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (true) {
            try {
                arena.close();
                return;
            } catch (IllegalStateException inUse) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("memory region still in use by a transfer after 10 s", inUse);
                }
                Thread.onSpinWait();
            }
        }
    }

    @Override
    public String toString() {
        return "MemoryRegion[" + memory.byteSize() + " bytes, key " + key + "]";
    }
}
