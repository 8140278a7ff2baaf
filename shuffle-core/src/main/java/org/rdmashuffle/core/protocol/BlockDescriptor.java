package org.rdmashuffle.core.protocol;

/**
 * Where a reducer reads a block: {@code length} bytes at {@code address} of a region registered under
 * {@code rkey}, holding partitions {@code [startPartition, endPartition)} of one map output (a run of
 * contiguous partitions is one block, as Spark's batch fetch asks). An empty block has length 0 and
 * needs no read.
 *
 * <p>{@code rawLength} is the block's size once decompressed where the map side recorded it
 * (MapReduce's index does, and its merge needs it before reading); elsewhere it equals {@code length}.
 */
public record BlockDescriptor(int shuffleId, long mapId, int startPartition, int endPartition, long address,
                              long length, int rkey, long rawLength) {

    /** A block whose raw size is not recorded apart from its length (Spark's outputs). */
    public BlockDescriptor(int shuffleId, long mapId, int startPartition, int endPartition, long address, long length,
                           int rkey) {
        this(shuffleId, mapId, startPartition, endPartition, address, length, rkey, length);
    }

    public BlockId blockId() {
        return new BlockId(shuffleId, mapId, startPartition, endPartition);
    }

    public boolean isEmpty() {
        return length == 0;
    }
}
