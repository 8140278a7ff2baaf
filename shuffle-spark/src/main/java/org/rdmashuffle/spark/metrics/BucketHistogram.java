package org.rdmashuffle.spark.metrics;

import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.function.Supplier;

import com.codahale.metrics.Histogram;
import com.codahale.metrics.Reservoir;
import com.codahale.metrics.Snapshot;
import org.rdmashuffle.core.metrics.LatencyHistogram;

/**
 * The engine's {@link LatencyHistogram} (microseconds) as a Dropwizard histogram, read through: the
 * engine records on its completion pollers without knowing Dropwizard; Spark's sinks (the Prometheus
 * servlet, JMX, ...) read count, min, mean, max and the quantiles from the engine's buckets.
 */
final class BucketHistogram extends Histogram {
    private final Supplier<LatencyHistogram.Snapshot> source;

    BucketHistogram(Supplier<LatencyHistogram.Snapshot> source) {
        super(new Reservoir() {
            @Override
            public int size() {
                return (int) Math.min(Integer.MAX_VALUE, source.get().count());
            }

            @Override
            public void update(long value) {
                throw new UnsupportedOperationException("the engine records these values");
            }

            @Override
            public Snapshot getSnapshot() {
                return new Buckets(source.get());
            }
        });
        this.source = source;
    }

    @Override
    public void update(long value) {
        throw new UnsupportedOperationException("the engine records these values");
    }

    @Override
    public long getCount() {
        return source.get().count();
    }

    private static final class Buckets extends Snapshot {
        private final LatencyHistogram.Snapshot s;

        Buckets(LatencyHistogram.Snapshot s) {
            this.s = s;
        }

        @Override
        public double getValue(double quantile) {
            return s.quantileMicros(quantile);
        }

        /** Not kept (fixed buckets): the quantiles at every percent stand in for the values. */
        @Override
        public long[] getValues() {
            long[] v = new long[s.count() == 0 ? 0 : 100];
            for (int i = 0; i < v.length; i++) {
                v[i] = s.quantileMicros((i + 1) / 100.0);
            }
            return v;
        }

        @Override
        public int size() {
            return (int) Math.min(Integer.MAX_VALUE, s.count());
        }

        @Override
        public long getMax() {
            return s.maxMicros();
        }

        @Override
        public double getMean() {
            return s.meanMicros();
        }

        @Override
        public long getMin() {
            return s.minMicros();
        }

        /** From the per-percent quantiles: the buckets keep no values. */
        @Override
        public double getStdDev() {
            long[] v = getValues();
            if (v.length == 0) {
                return 0;
            }
            double mean = 0;
            for (long x : v) {
                mean += x;
            }
            mean /= v.length;
            double sq = 0;
            for (long x : v) {
                sq += (x - mean) * (x - mean);
            }
            return Math.sqrt(sq / v.length);
        }

        @Override
        public void dump(OutputStream output) {
            PrintWriter out = new PrintWriter(new java.io.OutputStreamWriter(output, StandardCharsets.UTF_8));
            for (long v : getValues()) {
                out.println(v);
            }
            out.flush();
        }
    }
}
