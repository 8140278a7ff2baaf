package org.rdmashuffle.core.metrics;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

import org.rdmashuffle.core.protocol.BlockDescriptor;

/**
 * What one application's reducers were served: fetch requests answered, the blocks and bytes
 * described to them (read one-sidedly afterwards: the server never sees the reads, so these are the
 * bytes it made readable), and requests refused, by {@link Refusal}. An answer is counted once it
 * is posted to its reducer (one never sent is not), on whichever thread posts it; a block it names
 * several times is counted once (a reducer choosing how often it names a block does not choose the
 * figures).
 */
public final class ServedCounts {
    private final LongAdder requests = new LongAdder();
    private final LongAdder blocks = new LongAdder();
    private final LongAdder bytes = new LongAdder();
    private final AtomicLongArray refusals = new AtomicLongArray(Refusal.values().length);

    /** An answer describing {@code described} was sent: a request, and its distinct blocks and their bytes. */
    public void answered(java.util.Collection<BlockDescriptor> described) {
        long n = 0;
        long b = 0;
        java.util.Set<BlockDescriptor> seen = new java.util.HashSet<>(Math.max(4, described.size() * 2));
        for (BlockDescriptor d : described) {
            if (seen.add(d)) {
                n++;
                b += d.length();
            }
        }
        blocks.add(n);
        bytes.add(b);
        // Last, and read first by snapshot(): whoever sees the request counted sees its blocks and bytes.
        requests.increment();
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
