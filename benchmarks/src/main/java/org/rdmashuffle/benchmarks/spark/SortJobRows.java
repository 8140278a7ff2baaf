package org.rdmashuffle.benchmarks.spark;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * The sort job's records ({@code ShuffleJob --job sort}): TeraSort's shape, 100 bytes each, a 10-byte
 * key and a 90-byte value, made by map {@code p} of {@code maps} from a generator seeded by the map (as
 * {@link MainJobRows} makes the main job's), so every run sorts the same records. Keys and values are
 * random bytes: keys spread evenly over the key space (what TeraGen's are), and values incompressible
 * (TeraGen's filler is not), so the shuffle carries about 100 bytes a record with compression on.
 *
 * <p>Also what the job's partitioning and its check need, none of it touching Spark (a test computes
 * a run's expected result with it alone): the range partition of a key ({@link #partition}, R equal
 * ranges of the key space: uniform keys make them what sampling would find, without the sampling job
 * TeraSort runs first), a record's hash, and the result of a sorted output ({@link Check}).
 */
public final class SortJobRows {
    public static final int KEY_BYTES = 10;
    public static final int VALUE_BYTES = 90;
    public static final int RECORD_BYTES = KEY_BYTES + VALUE_BYTES;

    private final SplittableRandom random;
    private int left;
    private byte[] value;

    public SortJobRows(int p, int rows, int maps) {
        this.random = new SplittableRandom(p * 0x9E3779B97F4A7C15L + 0x5DEECE66DL); // not the main job's streams
        this.left = rows / maps + (p < rows % maps ? 1 : 0); // every row made, whatever M
    }

    public boolean hasNext() {
        return left > 0;
    }

    /** The next record's key ({@link #KEY_BYTES} bytes); its value is {@link #value()} after this. */
    public byte[] next() {
        left--;
        byte[] key = new byte[KEY_BYTES];
        random.nextBytes(key);
        value = new byte[VALUE_BYTES];
        random.nextBytes(value);
        return key;
    }

    /** The value of the record {@link #next()} made last ({@link #VALUE_BYTES} bytes). */
    public byte[] value() {
        return value;
    }

    /**
     * The reducer of {@code partitions} that takes {@code key}: R equal ranges of the key space by its
     * first four bytes (unsigned), so every key of a lower partition sorts before every key of a higher one.
     */
    public static int partition(byte[] key, int partitions) {
        long prefix = (key[0] & 0xFFL) << 24 | (key[1] & 0xFFL) << 16 | (key[2] & 0xFFL) << 8 | (key[3] & 0xFFL);
        return (int) ((prefix * partitions) >>> 32);
    }

    /** The sort's order: keys as unsigned bytes, TeraSort's. */
    public static int compareKeys(byte[] a, byte[] b) {
        return Arrays.compareUnsigned(a, b);
    }

    /** A record's hash from its key and value: what the checksum sums (order-independent, as TeraValidate's). */
    public static long hash(byte[] key, byte[] value) {
        long h = 0x84222325CBF29CE4L;
        for (byte b : key) {
            h = (h ^ (b & 0xFF)) * 0x100000001B3L;
        }
        for (byte b : value) {
            h = (h ^ (b & 0xFF)) * 0x100000001B3L;
        }
        return h ^ (h >>> 29);
    }

    /**
     * What one reducer's output, read in order, adds up to: its records, the sum of their hashes,
     * whether each key is at least the one before, and its first and last key. The job's result is
     * {@link #result} of every reducer's, in partition order.
     */
    public static final class Check implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        long rows;
        long checksum;
        boolean sorted = true;
        byte[] first;
        byte[] last;

        /** Adds the next record of the output ({@code key} kept, not copied: each record read is an array of its own). */
        public void add(byte[] key, byte[] value) {
            if (last != null && compareKeys(last, key) > 0) {
                sorted = false;
            }
            if (first == null) {
                first = key;
            }
            last = key;
            rows++;
            checksum += hash(key, value);
        }
    }

    /**
     * The job's result from its reducers' checks, in partition order: rows, checksum, and whether the
     * whole output is sorted (each reducer's output in order, and each reducer's keys after the last
     * non-empty one's before it). Identical in every run that sorted the same records.
     */
    public static String result(java.util.List<Check> partitions) {
        long rows = 0;
        long checksum = 0;
        boolean sorted = true;
        int nonEmpty = 0;
        byte[] before = null;
        for (Check c : partitions) {
            rows += c.rows;
            checksum += c.checksum;
            sorted &= c.sorted;
            if (c.rows > 0) {
                nonEmpty++;
                if (before != null && compareKeys(before, c.first) > 0) {
                    sorted = false;
                }
                before = c.last;
            }
        }
        return rows + " rows in " + nonEmpty + " of " + partitions.size() + " partitions, " + (sorted ? "sorted" : "NOT SORTED")
                + ", checksum " + Long.toHexString(checksum);
    }

    /** Whether {@code result} says the output was sorted. */
    public static boolean saysSorted(String result) {
        return result.contains(", sorted, ");
    }

    /**
     * What the job computes for {@code rows} rows from {@code maps} maps sorted into {@code reducers}
     * partitions, computed here without Spark or any shuffle (each partition's records kept and sorted:
     * for tests' sizes).
     */
    public static String expectedResult(int rows, int maps, int reducers) {
        java.util.List<java.util.List<byte[][]>> byPartition = new java.util.ArrayList<>();
        for (int r = 0; r < reducers; r++) {
            byPartition.add(new java.util.ArrayList<>());
        }
        for (int p = 0; p < maps; p++) {
            for (SortJobRows it = new SortJobRows(p, rows, maps); it.hasNext(); ) {
                byte[] key = it.next();
                byPartition.get(partition(key, reducers)).add(new byte[][] {key, it.value()});
            }
        }
        java.util.List<Check> checks = new java.util.ArrayList<>();
        for (java.util.List<byte[][]> records : byPartition) {
            records.sort((a, b) -> compareKeys(a[0], b[0]));
            Check c = new Check();
            records.forEach(rec -> c.add(rec[0], rec[1]));
            checks.add(c);
        }
        return result(checks);
    }
}
