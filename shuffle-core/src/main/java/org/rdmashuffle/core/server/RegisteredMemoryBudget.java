package org.rdmashuffle.core.server;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Map-output bytes registered with the device across every application of a serving engine: each
 * application's {@link MapOutputRegistry} has its own limit (its share), and all of them draw from
 * this one, so the node's pinned memory stays bounded however many applications it serves.
 *
 * <p>When the node's budget is spent, an application that needs room takes it from the others' idle
 * regions (those not described within their lease), the largest holders first: memory one
 * application registered while the node was quiet does not keep another from registering later. A
 * region within its lease is never taken (a reducer may be reading it); what one application can hold
 * that way is bounded by its own limit. Thread-safe; never holds a registry's lock while taking
 * another's.
 */
public final class RegisteredMemoryBudget {
    private final long limitBytes;
    private final AtomicLong used = new AtomicLong();
    private final List<MapOutputRegistry> registries = new CopyOnWriteArrayList<>();

    public RegisteredMemoryBudget(long limitBytes) {
        this.limitBytes = limitBytes;
    }

    /** Takes {@code bytes} if they fit; false (nothing taken) if not. */
    boolean tryReserve(long bytes) {
        while (true) {
            long now = used.get();
            if (now + bytes > limitBytes) {
                return false;
            }
            if (used.compareAndSet(now, now + bytes)) {
                return true;
            }
        }
    }

    void release(long bytes) {
        used.addAndGet(-bytes);
    }

    void join(MapOutputRegistry r) {
        registries.add(r);
    }

    void leave(MapOutputRegistry r) {
        registries.remove(r);
    }

    /**
     * Deregisters idle regions of registries other than {@code forWhom}, largest holders first, until
     * {@code bytes} are free in the budget or nothing idle is left; returns the bytes released. Call
     * with no registry's lock held.
     */
    long reclaimIdle(long bytes, MapOutputRegistry forWhom) {
        record Holder(MapOutputRegistry registry, long bytes) {
        }
        List<Holder> others = new ArrayList<>();
        for (MapOutputRegistry r : registries) {
            if (r != forWhom) {
                others.add(new Holder(r, r.registeredBytes())); // read once: the sort needs fixed keys
            }
        }
        others.sort(Comparator.comparingLong(Holder::bytes).reversed());
        long released = 0;
        for (Holder h : others) {
            long missing = used.get() + bytes - limitBytes;
            if (missing <= 0) {
                break;
            }
            released += h.registry().releaseIdle(missing);
        }
        return released;
    }

    public long usedBytes() {
        return used.get();
    }

    public long limitBytes() {
        return limitBytes;
    }
}
