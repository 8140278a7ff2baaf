package org.rdmashuffle.core.server;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Map-output bytes registered with the device across every application of a serving engine: each
 * application's {@link MapOutputRegistry} has its own limit, and all of them draw from this one, so
 * the node's pinned memory stays bounded however many applications it serves. Thread-safe.
 */
public final class RegisteredMemoryBudget {
    private final long limitBytes;
    private final AtomicLong used = new AtomicLong();

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

    public long usedBytes() {
        return used.get();
    }

    public long limitBytes() {
        return limitBytes;
    }
}
