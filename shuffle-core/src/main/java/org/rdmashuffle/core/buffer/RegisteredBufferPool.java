package org.rdmashuffle.core.buffer;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.ProtectionDomain;

/**
 * Registered memory for fetched blocks. Registering per fetch costs a kernel call and page pinning,
 * so memory is registered once in chunks and cut into power-of-two buffers (4 KiB up to a chunk);
 * a free buffer goes back on its class's free list. A request larger than a chunk gets a region of
 * its own, deregistered on release. Everything counts against {@code limitBytes}: {@link
 * #allocate} returns null when the limit is reached, and the caller waits for a release. A chunk none
 * of whose buffers is out is cut again for the class that needs one: otherwise, once every chunk had
 * been cut for some sizes, a block of another size would wait for ever.
 */
public final class RegisteredBufferPool implements AutoCloseable {
    static final int MIN_CLASS_SHIFT = 12;

    private final ProtectionDomain pd;
    private final long limitBytes;
    private final int chunkBytes;
    private final int classes;
    private final ArrayDeque<RegisteredBuffer>[] free;
    private final List<Chunk> chunks = new ArrayList<>();
    private final java.util.Set<MemoryRegion> dedicated = new java.util.HashSet<>();
    private final Runnable onRelease;
    private long registeredBytes;
    private int outstanding;
    private boolean closed;

    /**
     * @param chunkBytes a power of two of at least 4 KiB: the unit of registration
     * @param onRelease called (without the pool's lock) after every release, to resume waiting reads
     */
    @SuppressWarnings("unchecked")
    public RegisteredBufferPool(ProtectionDomain pd, long limitBytes, int chunkBytes, Runnable onRelease) {
        if (Integer.bitCount(chunkBytes) != 1 || chunkBytes < (1 << MIN_CLASS_SHIFT) || limitBytes < chunkBytes) {
            throw new IllegalArgumentException("buffer pool of " + limitBytes + " bytes in chunks of " + chunkBytes);
        }
        this.pd = pd;
        this.limitBytes = limitBytes;
        this.chunkBytes = chunkBytes;
        this.onRelease = onRelease;
        this.classes = Integer.numberOfTrailingZeros(chunkBytes) - MIN_CLASS_SHIFT + 1;
        this.free = new ArrayDeque[classes];
        for (int i = 0; i < classes; i++) {
            free[i] = new ArrayDeque<>();
        }
    }

    /** A registered chunk, cut into buffers of one size class; {@code out} of them are handed out. */
    static final class Chunk {
        final MemoryRegion region;
        int sizeClass;
        int out;

        Chunk(MemoryRegion region) {
            this.region = region;
        }
    }

    /** A buffer of at least {@code bytes}, or null if the registered-memory limit leaves no room now. */
    public synchronized RegisteredBuffer allocate(long bytes) {
        if (closed) {
            throw new IllegalStateException("registered buffer pool is closed");
        }
        if (bytes <= 0) {
            throw new IllegalArgumentException("buffer of " + bytes + " bytes");
        }
        if (bytes > chunkBytes) {
            if (registeredBytes + bytes > limitBytes) {
                return null;
            }
            MemoryRegion mr = pd.allocateAndRegister(bytes, Access.LOCAL_WRITE);
            dedicated.add(mr);
            registeredBytes += bytes;
            outstanding++;
            return new RegisteredBuffer(this, mr.segment(), mr.lkey(), -1, mr, null);
        }
        int c = Math.max(0, 64 - Long.numberOfLeadingZeros(bytes - 1) - MIN_CLASS_SHIFT);
        if (free[c].isEmpty() && !carve(c)) {
            return null;
        }
        RegisteredBuffer b = free[c].pop();
        outstanding++;
        b.chunk.out++;
        // A fresh object per hand-out: a stale holder's second release cannot free someone else's buffer.
        return new RegisteredBuffer(this, b.segment(), b.lkey(), c, null, b.chunk);
    }

    /** Gives class {@code c} a chunk's worth of buffers: a new chunk if the limit allows, else an idle one cut again. */
    private boolean carve(int c) {
        Chunk chunk;
        if (registeredBytes + chunkBytes <= limitBytes) {
            chunk = new Chunk(pd.allocateAndRegister(chunkBytes, Access.LOCAL_WRITE));
            chunks.add(chunk);
            registeredBytes += chunkBytes;
        } else {
            chunk = idleChunk();
            if (chunk == null) {
                return false;
            }
            Chunk idle = chunk;
            free[idle.sizeClass].removeIf(b -> b.chunk == idle);
        }
        chunk.sizeClass = c;
        long size = 1L << (c + MIN_CLASS_SHIFT);
        MemorySegment all = chunk.region.segment();
        for (long off = 0; off + size <= chunkBytes; off += size) {
            free[c].push(new RegisteredBuffer(this, all.asSlice(off, size), chunk.region.lkey(), c, null, chunk));
        }
        return true;
    }

    /** A chunk none of whose buffers is handed out (all on their free list), or null. */
    private Chunk idleChunk() {
        for (Chunk k : chunks) {
            if (k.out == 0) {
                return k;
            }
        }
        return null;
    }

    void release(RegisteredBuffer b) {
        synchronized (this) {
            outstanding--;
            if (b.dedicated != null) {
                if (dedicated.remove(b.dedicated)) {
                    b.dedicated.close();
                }
                registeredBytes -= b.segment().byteSize();
            } else {
                b.chunk.out--;
                if (!closed) {
                    free[b.sizeClass].push(b);
                }
            }
        }
        if (onRelease != null) {
            onRelease.run();
        }
    }

    /** Buffers handed out and not yet released: zero when nothing holds fetched data. */
    public synchronized int outstanding() {
        return outstanding;
    }

    public synchronized long registeredBytes() {
        return registeredBytes;
    }

    public long limitBytes() {
        return limitBytes;
    }

    public int chunkBytes() {
        return chunkBytes;
    }

    /** Deregisters every chunk. Buffers still held become invalid: owners must have released them. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (ArrayDeque<RegisteredBuffer> f : free) {
            f.clear();
        }
        chunks.forEach(k -> k.region.close());
        chunks.clear();
        dedicated.forEach(MemoryRegion::close);
        dedicated.clear();
    }
}
