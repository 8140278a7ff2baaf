package org.rdmashuffle.core.metrics;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.LongAdder;

import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.VerbsException;

/**
 * Memory registrations of one part of the engine (a tenant's map outputs, the fetch buffers): how
 * many succeeded, their bytes and the time they took, the failures by errno, and (map outputs) the
 * regions deregistered to make room for others. Failures are keyed by errno's name, a set the kernel
 * fixes, so the map stays small whatever a peer does.
 */
public final class RegistrationCounts {
    private final LongAdder count = new LongAdder();
    private final LongAdder bytes = new LongAdder();
    private final LongAdder nanos = new LongAdder();
    private final LongAdder evictions = new LongAdder();
    private final ConcurrentMap<String, LongAdder> failures = new ConcurrentHashMap<>();

    public void registered(long byteCount, long tookNanos) {
        count.increment();
        bytes.add(byteCount);
        nanos.add(tookNanos);
    }

    /**
     * A registered region was deregistered to make room under the registered-memory limits (it was not
     * described within its lease): its output is registered again if it is asked for again.
     */
    public void evicted() {
        evictions.increment();
    }

    /** A registration that failed: counted under its errno ({@code "other"} when not a verbs failure). */
    public void failed(Throwable cause) {
        String key = "other";
        for (Throwable t = cause; t != null; t = t.getCause()) {
            if (t instanceof VerbsException v && v.errno() != 0) {
                key = Errno.name(v.errno());
                break;
            }
        }
        failures.computeIfAbsent(key, k -> new LongAdder()).increment();
    }

    public Snapshot snapshot() {
        Map<String, Long> f = new TreeMap<>();
        failures.forEach((k, v) -> f.put(k, v.sum()));
        return new Snapshot(count.sum(), bytes.sum(), nanos.sum(), evictions.sum(), f);
    }

    /**
     * @param count registrations made (an output registered again after an eviction counts again)
     * @param evictions regions deregistered to make room for others: under limits too small for the
     *                  outputs being read, each is a registration to be made again if its output is asked for again
     * @param failuresByErrno failed registrations by errno name (e.g. {@code ENOMEM})
     */
    public record Snapshot(long count, long bytes, long nanos, long evictions, Map<String, Long> failuresByErrno) {
        public static final Snapshot NONE = new Snapshot(0, 0, 0, 0, Map.of());

        public long failures() {
            return failuresByErrno.values().stream().mapToLong(Long::longValue).sum();
        }

        public Snapshot plus(Snapshot o) {
            Map<String, Long> f = new TreeMap<>(failuresByErrno);
            o.failuresByErrno.forEach((k, v) -> f.merge(k, v, Long::sum));
            return new Snapshot(count + o.count, bytes + o.bytes, nanos + o.nanos, evictions + o.evictions, f);
        }
    }
}
