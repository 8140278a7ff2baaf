package org.rdmashuffle.core.metrics;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * Durations in microseconds, counted in fixed log-linear buckets: exact below 16 µs, then 8 buckets
 * per power of two (a quantile is within 12.5% of the true value), up to 2^40 µs (12 days). Fixed
 * memory however many values are recorded, lock-free, and cheap enough for a completion poller:
 * one atomic increment and two adds per value. Never reset: a reader that wants a window takes the
 * difference of two snapshots.
 */
public final class LatencyHistogram {
    private static final int LINEAR = 16;
    private static final int SUB_BUCKETS = 8;
    private static final int MAX_POWER = 40;
    static final int BUCKETS = LINEAR + (MAX_POWER - 4) * SUB_BUCKETS;

    private final AtomicLongArray counts = new AtomicLongArray(BUCKETS);
    private final LongAdder count = new LongAdder();
    private final LongAdder sumMicros = new LongAdder();
    private final AtomicLong maxMicros = new AtomicLong();

    /** Records one duration. */
    public void recordNanos(long nanos) {
        long micros = Math.max(0, nanos / 1_000);
        counts.incrementAndGet(bucketOf(micros));
        count.increment();
        sumMicros.add(micros);
        if (micros > maxMicros.get()) {
            maxMicros.accumulateAndGet(micros, Math::max);
        }
    }

    static int bucketOf(long micros) {
        if (micros < LINEAR) {
            return (int) micros;
        }
        int power = 63 - Long.numberOfLeadingZeros(micros); // >= 4
        if (power >= MAX_POWER) {
            return BUCKETS - 1;
        }
        int sub = (int) ((micros >>> (power - 3)) & (SUB_BUCKETS - 1));
        return LINEAR + (power - 4) * SUB_BUCKETS + sub;
    }

    /** The smallest value that falls into {@code bucket}. */
    static long lowerBound(int bucket) {
        if (bucket < LINEAR) {
            return bucket;
        }
        int power = 4 + (bucket - LINEAR) / SUB_BUCKETS;
        int sub = (bucket - LINEAR) % SUB_BUCKETS;
        return (1L << power) + ((long) sub << (power - 3));
    }

    /** What has been recorded so far. */
    public Snapshot snapshot() {
        long[] c = new long[BUCKETS];
        for (int i = 0; i < BUCKETS; i++) {
            c[i] = counts.get(i);
        }
        return new Snapshot(c, sumMicros.sum(), maxMicros.get());
    }

    /** Recorded values at one moment; quantiles are the lower bound of the bucket they fall in. */
    public static final class Snapshot {
        private final long[] counts;
        private final long count;
        private final long sumMicros;
        private final long maxMicros;

        Snapshot(long[] counts, long sumMicros, long maxMicros) {
            this.counts = counts;
            long n = 0;
            for (long c : counts) {
                n += c;
            }
            this.count = n;
            this.sumMicros = sumMicros;
            this.maxMicros = maxMicros;
        }

        public long count() {
            return count;
        }

        public long maxMicros() {
            return maxMicros;
        }

        /** The sum of the recorded values, in microseconds. */
        public long sumMicros() {
            return sumMicros;
        }

        /**
         * How many recorded values are below {@code micros}, which must be a bucket's lower bound (every power
         * of two is): exact, as a histogram exposed with those bounds needs. Values are whole microseconds
         * (a duration's nanoseconds divided down), so "below 2^k µs" is the duration's own "below".
         */
        public long countBelowMicros(long micros) {
            int b = bucketOf(micros);
            if (micros <= 0 || lowerBound(b) != micros) {
                throw new IllegalArgumentException("not a bucket's lower bound (microseconds): " + micros);
            }
            long n = 0;
            for (int i = 0; i < b; i++) {
                n += counts[i];
            }
            return n;
        }

        public double meanMicros() {
            return count == 0 ? 0 : (double) sumMicros / count;
        }

        public long minMicros() {
            for (int i = 0; i < counts.length; i++) {
                if (counts[i] > 0) {
                    return lowerBound(i);
                }
            }
            return 0;
        }

        /** The value below which {@code q} (0..1) of the recorded values fall, in microseconds; 0 if none. */
        public long quantileMicros(double q) {
            if (count == 0) {
                return 0;
            }
            long rank = Math.max(1, (long) Math.ceil(Math.min(1.0, Math.max(0.0, q)) * count));
            long seen = 0;
            for (int i = 0; i < counts.length; i++) {
                seen += counts[i];
                if (seen >= rank) {
                    return Math.min(lowerBound(i), maxMicros);
                }
            }
            return maxMicros;
        }
    }
}
