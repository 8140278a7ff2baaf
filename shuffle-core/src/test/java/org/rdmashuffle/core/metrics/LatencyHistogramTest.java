package org.rdmashuffle.core.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Random;

import org.junit.jupiter.api.Test;

class LatencyHistogramTest {
    @Test
    void everyBucketStartsWhereItsValuesStart_andBucketsAscend() {
        for (int b = 1; b < LatencyHistogram.BUCKETS; b++) {
            long low = LatencyHistogram.lowerBound(b);
            assertTrue(low > LatencyHistogram.lowerBound(b - 1), "bucket " + b);
            assertEquals(b, LatencyHistogram.bucketOf(low), "the lower bound of bucket " + b);
            assertEquals(b - 1, LatencyHistogram.bucketOf(low - 1), "one below bucket " + b);
        }
    }

    @Test
    void quantiles_areWithinAnEighthOfTheTrueValue() {
        LatencyHistogram h = new LatencyHistogram();
        Random r = new Random(7);
        long[] micros = new long[20_000];
        for (int i = 0; i < micros.length; i++) {
            micros[i] = (long) Math.exp(r.nextDouble() * 14); // 1 µs .. 1.2 s, spread over every power of two
            h.recordNanos(micros[i] * 1_000 + 999); // sub-microsecond parts are dropped
        }
        Arrays.sort(micros);
        LatencyHistogram.Snapshot s = h.snapshot();
        assertEquals(micros.length, s.count());
        assertEquals(micros[micros.length - 1], s.maxMicros());
        for (double q : new double[] {0.01, 0.5, 0.9, 0.99, 0.999}) {
            long truth = micros[(int) Math.ceil(q * micros.length) - 1];
            long got = s.quantileMicros(q);
            assertTrue(got <= truth && got >= truth - truth / 8 - 1, "q" + q + ": " + got + " for " + truth);
        }
        double mean = Arrays.stream(micros).average().orElseThrow();
        assertEquals(mean, s.meanMicros(), 1e-6 * mean);
    }

    /** What a Prometheus histogram with power-of-two bounds exposes: exact counts below each bound, and the sum. */
    @Test
    void countsBelowAPowerOfTwo_areExact_andOtherBoundsAreRefused() {
        LatencyHistogram h = new LatencyHistogram();
        Random r = new Random(11);
        long[] micros = new long[5_000];
        long sum = 0;
        for (int i = 0; i < micros.length; i++) {
            micros[i] = (long) Math.exp(r.nextDouble() * 16);
            sum += micros[i];
            h.recordNanos(micros[i] * 1_000 + 999);
        }
        LatencyHistogram.Snapshot s = h.snapshot();
        for (int k = 0; k <= 30; k++) {
            long bound = 1L << k;
            long truth = Arrays.stream(micros).filter(m -> m < bound).count();
            assertEquals(truth, s.countBelowMicros(bound), "below " + bound + " us");
        }
        assertEquals(sum, s.sumMicros());
        assertThrows(IllegalArgumentException.class, () -> s.countBelowMicros(100), "100 us is inside a bucket");
        assertThrows(IllegalArgumentException.class, () -> s.countBelowMicros(0));
    }

    @Test
    void empty_saysZero() {
        LatencyHistogram.Snapshot s = new LatencyHistogram().snapshot();
        assertEquals(0, s.count());
        assertEquals(0, s.quantileMicros(0.99));
        assertEquals(0, s.minMicros());
        assertEquals(0.0, s.meanMicros());
    }
}
