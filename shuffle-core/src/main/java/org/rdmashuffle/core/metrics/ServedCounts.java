package org.rdmashuffle.core.metrics;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

import org.rdmashuffle.core.protocol.BlockDescriptor;

/**
 * What one application's reducers were served: fetch requests answered, the blocks and bytes
 * described to them (read one-sidedly afterwards: the server never sees the reads, so these are the
 * bytes it made readable), and requests refused, by {@link Refusal}. Counted where the answer is
 * made, on whichever thread makes it.
 */
public final class ServedCounts {
    private final LongAdder requests = new LongAdder();
    private final LongAdder blocks = new LongAdder();
    private final LongAdder bytes = new LongAdder();
    private final AtomicLongArray refusals = new AtomicLongArray(Refusal.values().length);

    public void answered(Iterable<BlockDescriptor> described) {
        requests.increment();
        long n = 0;
        long b = 0;
        for (BlockDescriptor d : described) {
            n++;
            b += d.length();
        }
        blocks.add(n);
        bytes.add(b);
    }

    public void refused(Refusal why) {
        refusals.incrementAndGet(why.ordinal());
    }

    public Snapshot snapshot() {
        Map<Refusal, Long> r = new EnumMap<>(Refusal.class);
        for (Refusal k : Refusal.values()) {
            r.put(k, refusals.get(k.ordinal()));
        }
        return new Snapshot(requests.sum(), blocks.sum(), bytes.sum(), r);
    }

    /** @param refusals refused requests by kind, every kind present (0 where none) */
    public record Snapshot(long requests, long blocks, long bytes, Map<Refusal, Long> refusals) {
        public static final Snapshot NONE = new ServedCounts().snapshot();

        public long refused() {
            return refusals.values().stream().mapToLong(Long::longValue).sum();
        }

        public Snapshot plus(Snapshot o) {
            Map<Refusal, Long> r = new EnumMap<>(refusals);
            o.refusals.forEach((k, v) -> r.merge(k, v, Long::sum));
            return new Snapshot(requests + o.requests, blocks + o.blocks, bytes + o.bytes, r);
        }
    }
}
