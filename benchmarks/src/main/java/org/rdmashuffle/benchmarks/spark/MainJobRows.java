package org.rdmashuffle.benchmarks.spark;

import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The rows map {@code p} of {@code maps} writes in the main job ({@link ShuffleJob}): each a key under
 * 100,000 and 64 characters, from a generator seeded by the map, so every run of the job makes the same,
 * and {@link #expectedResult} can compute the job's result without Spark (no Spark or Scala class here:
 * the Soft-RoCE pair's test JVM, which checks a run against it, has neither on its class path).
 */
public final class MainJobRows {
    private final SplittableRandom random;
    private final byte[] raw = new byte[48];
    private int left;
    private long key;

    public MainJobRows(int p, int rows, int maps) {
        this.random = new SplittableRandom(p * 0x9E3779B97F4A7C15L);
        this.left = rows / maps + (p < rows % maps ? 1 : 0); // every row made, whatever M
    }

    public boolean hasNext() {
        return left > 0;
    }

    /** The next row's value; its key is {@link #key()} after this. */
    public String next() {
        left--;
        for (int i = 0; i < raw.length; i += 8) {
            long v = random.nextLong();
            for (int k = 0; k < 8; k++) {
                raw[i + k] = (byte) (v >>> (8 * k));
            }
        }
        key = random.nextLong(100_000);
        return Base64.getEncoder().encodeToString(raw); // 64 chars
    }

    public long key() {
        return key;
    }

    /** The job's result from each key's (row count, sum of its values' hash codes): order-independent. */
    public static String result(Map<Long, long[]> byKey) {
        long total = 0;
        long checksum = 0;
        for (Map.Entry<Long, long[]> g : byKey.entrySet()) {
            total += g.getValue()[0];
            checksum += (g.getKey() * 0x9E3779B97F4A7C15L) ^ (g.getValue()[1] * 31 + g.getValue()[0]);
        }
        return byKey.size() + " keys, " + total + " rows, checksum " + Long.toHexString(checksum);
    }

    /**
     * What the job computes for {@code rows} rows from {@code maps} maps, computed here without Spark or
     * any shuffle: what a run's result is checked against where no built-in round runs beside it.
     */
    public static String expectedResult(int rows, int maps) {
        Map<Long, long[]> byKey = new HashMap<>();
        for (int p = 0; p < maps; p++) {
            for (MainJobRows it = new MainJobRows(p, rows, maps); it.hasNext(); ) {
                String value = it.next();
                long[] g = byKey.computeIfAbsent(it.key(), k -> new long[2]);
                g[0]++;
                g[1] += value.hashCode();
            }
        }
        return result(byKey);
    }
}
