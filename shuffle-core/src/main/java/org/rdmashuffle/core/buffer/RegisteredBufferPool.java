package org.rdmashuffle.core.buffer;

import java.util.ArrayList;
import java.util.List;

import org.rdmashuffle.verbs.MemoryRegion;

/**
 * Registered memory for fetched blocks. Registering per fetch costs a kernel call and page pinning,
 * so memory is registered once, in slabs of {@code slabBytes} (registered as they are first needed,
 * up to {@code limitBytes}), and each slab is cut by a {@link BuddyAllocator} into power-of-two
 * buffers of 4 KiB up to a slab. Any free run of a slab serves any size, so a size is never starved
 * by space another size left behind. Nothing larger than a slab is handed out: a larger block is read
 * in slab-sized pieces ({@code client.PieceReads}), so no fetch ever registers memory of its own.
 *
 * <p>{@link #allocate} returns null when no slab has room and the limit allows no new one: the caller
 * waits for a release ({@code onRelease} tells it). A failed registration throws, and leaves the pool
 * as it was. Given a {@code grower}, the pool registers new slabs there, never on the allocating
 * thread (an engine's completion poller: registering zeroes and pins 4 MiB, and every completion
 * behind it would wait): {@link #allocate} returns null meanwhile, {@code onRelease} runs when the
 * slab is ready, and a registration that failed is thrown by the next {@link #allocate} that still
 * finds no room. Only by that one: once room comes free (a buffer released, or handed out from the
 * slabs there are), the failure is forgotten, and the next allocation that needs a slab registers
 * again. Kept longer, a transient ENOMEM would fail some later, unrelated fetch.
 */
public final class RegisteredBufferPool implements AutoCloseable {
    static final int UNIT_SHIFT = 12;

    /** How the pool registers a slab: {@code ProtectionDomain.allocateAndRegister(bytes, LOCAL_WRITE)} in an engine. */
    @FunctionalInterface
    public interface Registrar {
        MemoryRegion register(long bytes);
    }

    private final Registrar registrar;
    private final long limitBytes;
    private final int slabBytes;
    private final int levels;
    private final List<Slab> slabs = new ArrayList<>();
    private final Runnable onRelease;
    private final java.util.concurrent.Executor grower;
    /** A slab is being registered by the grower (its bytes counted in registeredBytes already). */
    private boolean growing;
    /** The grower's failed registration, for the next allocation that finds no room; cleared when room comes free. */
    private RuntimeException growthFailure;
    private long registeredBytes;
    private long bytesOut;
    private int outstanding;
    private boolean closed;

    /**
     * @param slabBytes a power of two of at least 4 KiB: the unit of registration and the largest buffer
     * @param onRelease called (without the pool's lock) after every release, to resume waiting reads
     */
    public RegisteredBufferPool(Registrar registrar, long limitBytes, int slabBytes, Runnable onRelease) {
        this(registrar, limitBytes, slabBytes, onRelease, null);
    }

    /** @param grower where new slabs are registered; null: on the allocating thread */
    public RegisteredBufferPool(Registrar registrar, long limitBytes, int slabBytes, Runnable onRelease,
                                java.util.concurrent.Executor grower) {
        this.grower = grower;
        if (Integer.bitCount(slabBytes) != 1 || slabBytes < (1 << UNIT_SHIFT) || limitBytes < slabBytes) {
            throw new IllegalArgumentException("buffer pool of " + limitBytes + " bytes in slabs of " + slabBytes);
        }
        this.registrar = registrar;
        this.limitBytes = limitBytes;
        this.slabBytes = slabBytes;
        this.onRelease = onRelease;
        this.levels = Integer.numberOfTrailingZeros(slabBytes) - UNIT_SHIFT;
    }

    /** A registered slab and the buddy allocator cutting it. */
    static final class Slab {
        final MemoryRegion region;
        final BuddyAllocator buddies;
        /** The buffer last handed out at each unit, reused when the same unit and order come back free. */
        final RegisteredBuffer[] byUnit;

        Slab(MemoryRegion region, int levels) {
            this.region = region;
            this.buddies = new BuddyAllocator(levels);
            this.byUnit = new RegisteredBuffer[1 << levels];
        }
    }

    /**
     * A buffer of at least {@code bytes} (at most {@link #slabBytes()}), or null if the limit leaves no
     * room now. Throws if a new slab cannot be registered (the pool is unchanged).
     */
    public RegisteredBuffer allocate(long bytes) {
        if (bytes <= 0 || bytes > slabBytes) {
            throw new IllegalArgumentException("a fetch buffer of " + bytes + " bytes (1 to " + slabBytes + ")");
        }
        int order = Math.max(0, 64 - Long.numberOfLeadingZeros(bytes - 1) - UNIT_SHIFT);
        synchronized (this) {
            ensureOpen();
            for (int i = 0; i < slabs.size(); i++) { // indexed: no iterator per allocation
                RegisteredBuffer b = take(slabs.get(i), order);
                if (b != null) {
                    growthFailure = null; // the slabs there are served: whoever waited for a new one is served too, or asks again
                    return b;
                }
            }
            if (growthFailure != null) {
                RuntimeException failure = growthFailure;
                growthFailure = null;
                throw failure;
            }
            if (growing || registeredBytes + slabBytes > limitBytes) {
                return null;
            }
            if (grower == null) {
                // Under the lock: registration is rare (once per slab, up to the limit) and bounded.
                Slab s = new Slab(registrar.register(slabBytes), levels);
                slabs.add(s);
                registeredBytes += slabBytes;
                return take(s, order);
            }
            growing = true;
            registeredBytes += slabBytes; // reserved while the grower registers it
        }
        try {
            grower.execute(this::grow);
        } catch (java.util.concurrent.RejectedExecutionException closing) {
            synchronized (this) {
                growing = false;
                registeredBytes -= slabBytes;
                notifyAll();
            }
        }
        return null;
    }

    /** Registers a slab: before the first fetch (so it needs no wait), and on the grower. */
    public void grow() {
        synchronized (this) {
            if (closed) {
                growing = false;
                notifyAll();
                return;
            }
            if (!growing) { // called directly (the first slab)
                if (registeredBytes + slabBytes > limitBytes) {
                    return;
                }
                growing = true;
                registeredBytes += slabBytes;
            }
        }
        MemoryRegion region = null;
        RuntimeException failure = null;
        try {
            region = registrar.register(slabBytes);
        } catch (RuntimeException e) {
            failure = e;
        }
        synchronized (this) {
            growing = false;
            notifyAll(); // close() waits for a registration under way
            if (failure != null) {
                registeredBytes -= slabBytes;
                growthFailure = failure;
            } else if (closed) {
                region.close();
                return;
            } else {
                slabs.add(new Slab(region, levels));
            }
        }
        if (onRelease != null) {
            onRelease.run(); // the reads waiting for room try again
        }
    }

    private RegisteredBuffer take(Slab s, int order) {
        int unit = s.buddies.allocate(order);
        if (unit < 0) {
            return null;
        }
        long size = 1L << (order + UNIT_SHIFT);
        outstanding++;
        bytesOut += size;
        // The object is reused with its unit and order (no allocation per read). A holder releases once (a
        // second release before the reuse still fails); fetched blocks guard their release themselves.
        RegisteredBuffer b = s.byUnit[unit];
        if (b != null && b.order == order && b.reuse()) {
            return b;
        }
        b = new RegisteredBuffer(this, s.region.segment(), (long) unit << UNIT_SHIFT, size, s.region.lkey(), s, unit, order);
        s.byUnit[unit] = b;
        return b;
    }

    void release(RegisteredBuffer b) {
        synchronized (this) {
            outstanding--;
            bytesOut -= b.size();
            if (!closed) {
                b.slab.buddies.free(b.unit, b.order);
            }
            growthFailure = null; // room came free: a failed registration is no reason to fail the next allocation
        }
        if (onRelease != null) {
            onRelease.run();
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("registered buffer pool is closed");
        }
    }

    /** Buffers handed out and not yet released: zero when nothing holds fetched data. */
    public synchronized int outstanding() {
        return outstanding;
    }

    /** Bytes of the buffers handed out (power-of-two sizes, so at least what was asked). */
    public synchronized long bytesOut() {
        return bytesOut;
    }

    public synchronized long registeredBytes() {
        return registeredBytes;
    }

    public long limitBytes() {
        return limitBytes;
    }

    /** The largest buffer the pool hands out: larger blocks are read in pieces of this size. */
    public int slabBytes() {
        return slabBytes;
    }

    /** Deregisters every slab. Buffers still held become invalid: owners must have released them. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        // A slab being registered on the grower: its region is closed when that ends (bounded wait).
        long deadline = System.nanoTime() + 2_000_000_000L;
        while (growing && System.nanoTime() < deadline) {
            try {
                wait(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        slabs.forEach(s -> s.region.close());
        slabs.clear();
    }
}
