package org.rdmashuffle.core.server;

import org.rdmashuffle.core.protocol.MapOutputLayout;

/**
 * A map output's index as the registry keeps it: the partition offsets in its data file, and for
 * outputs whose partitions' raw (decompressed) sizes are recorded apart (MapReduce's) their running
 * sums, so a block's raw size costs two reads however many partitions it spans: the completion
 * poller answers requests, and a request must cost what its bytes cost, not what the index's size
 * does. Validated once, when the output is added; immutable after.
 */
final class OutputIndex {
    /** Heap an output costs beyond its arrays (the output, its table entries, its keys), for the index budget. */
    static final int OVERHEAD_BYTES = 256;

    private final long[] offsets;
    /** rawBefore[p]: raw bytes of partitions [0, p); null where raw sizes are not recorded apart. */
    private final long[] rawBefore;
    /** Bytes the output's {@link MapOutputLayout} takes in a message. */
    private final int layoutBytes;

    private OutputIndex(long[] offsets, long[] rawBefore, int layoutBytes) {
        this.offsets = offsets;
        this.rawBefore = rawBefore;
        this.layoutBytes = layoutBytes;
    }

    /**
     * Checks and copies an index: {@code numPartitions + 1} non-decreasing offsets from 0 and, if
     * given, one non-negative raw length per partition whose sum fits a long. {@code what} names the
     * output in the exception (for the node's log).
     */
    static OutputIndex of(int shuffleId, long mapId, long[] offsets, long[] rawLengths, String what) {
        if (offsets.length < 2 || offsets[0] != 0) {
            throw new IllegalArgumentException(what + ": offsets must start at 0 and bound at least one partition");
        }
        for (int i = 1; i < offsets.length; i++) {
            if (offsets[i] < offsets[i - 1]) {
                throw new IllegalArgumentException(what + ": offset of partition " + i + " (" + offsets[i]
                        + ") is below that of partition " + (i - 1) + " (" + offsets[i - 1] + ")");
            }
        }
        long[] rawBefore = null;
        if (rawLengths != null) {
            if (rawLengths.length != offsets.length - 1) {
                throw new IllegalArgumentException(what + ": " + rawLengths.length + " raw lengths for "
                        + (offsets.length - 1) + " partitions");
            }
            rawBefore = new long[offsets.length];
            for (int p = 0; p < rawLengths.length; p++) {
                if (rawLengths[p] < 0) {
                    throw new IllegalArgumentException(what + ": raw length of partition " + p + " is negative");
                }
                try {
                    rawBefore[p + 1] = Math.addExact(rawBefore[p], rawLengths[p]);
                } catch (ArithmeticException overflow) {
                    throw new IllegalArgumentException(what + ": raw lengths add up beyond a long");
                }
            }
        }
        long[] copy = offsets.clone();
        return new OutputIndex(copy, rawBefore, MapOutputLayout.encodedSize(shuffleId, mapId, copy));
    }

    int partitions() {
        return offsets.length - 1;
    }

    long offset(int p) {
        return offsets[p];
    }

    /** The data file's size. */
    long size() {
        return offsets[offsets.length - 1];
    }

    /** Raw bytes of partitions [start, end); {@code stored} (their bytes in the file) where not recorded apart. */
    long rawLength(int start, int end, long stored) {
        return rawBefore == null ? stored : rawBefore[end] - rawBefore[start];
    }

    boolean recordsRawLengths() {
        return rawBefore != null;
    }

    /** The offsets, for a layout: shared, never to be changed. */
    long[] offsets() {
        return offsets;
    }

    int layoutBytes() {
        return layoutBytes;
    }

    /** What this index costs the heap, as the index budget counts it. */
    long heapBytes() {
        return OVERHEAD_BYTES + 16 + 8L * offsets.length + (rawBefore == null ? 0 : 16 + 8L * rawBefore.length);
    }
}
