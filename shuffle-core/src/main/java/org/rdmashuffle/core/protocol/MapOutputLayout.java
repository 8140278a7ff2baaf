package org.rdmashuffle.core.protocol;


/**
 * Where every partition of one map output lies: partition {@code p} is the bytes
 * {@code [address + offsets[p], address + offsets[p + 1])} of the region registered under {@code rkey}.
 * A server adds it to its answer on a reducer's first request for the output, so that the reducer
 * reads the output's other partitions without asking again (one round trip per block, not two).
 * Only for outputs whose partition sizes once decompressed are not recorded apart (Spark's): a
 * MapReduce reducer needs each block's raw length and reads one partition per map anyway.
 */
public record MapOutputLayout(int shuffleId, long mapId, long address, int rkey, long[] offsets) {
    public int partitions() {
        return offsets.length - 1;
    }

    /** Whether {@code b} is a block of this output (its partitions within it). */
    public boolean holds(BlockId b) {
        return b.shuffleId() == shuffleId && b.mapId() == mapId && b.endPartition() <= partitions();
    }

    /** Where partition {@code p} starts from the region's {@code address}; {@code offset(partitions())} is the end. */
    public long offset(int p) {
        return offsets[p];
    }

    /** The descriptor of {@code b}, a block of this output; null if its partitions lie outside it. */
    public BlockDescriptor describe(BlockId b) {
        if (!holds(b)) {
            return null;
        }
        long from = offsets[b.startPartition()];
        long length = offsets[b.endPartition()] - from;
        return length == 0 ? new BlockDescriptor(shuffleId, mapId, b.startPartition(), b.endPartition(), 0, 0, 0)
                : new BlockDescriptor(shuffleId, mapId, b.startPartition(), b.endPartition(), address + from, length, rkey);
    }

    /** Bytes it takes in a message, as {@code protocol.MessageCodec} writes it. */
    public int encodedSize() {
        return encodedSize(shuffleId, mapId, offsets);
    }

    /** {@link #encodedSize()} of the layout of these offsets, computed once per output by the registry. */
    public static int encodedSize(int shuffleId, long mapId, long[] offsets) {
        int partitions = offsets.length - 1;
        long n = varSize(shuffleId) + varSize(mapId) + 8 + 4 + varSize(partitions);
        for (int p = 0; p < partitions; p++) {
            n += varSize(offsets[p + 1] - offsets[p]);
        }
        return (int) Math.min(Integer.MAX_VALUE, n);
    }

    private static int varSize(long v) {
        int n = 1;
        while ((v >>>= 7) != 0) {
            n++;
        }
        return n;
    }

    @Override
    public String toString() {
        return "MapOutputLayout[shuffle " + shuffleId + ", map " + mapId + ", " + partitions() + " partitions]";
    }
}
