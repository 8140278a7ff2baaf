package org.rdmashuffle.core.server;

/**
 * Where a reducer reads a block: {@code length} bytes at {@code address} of a region registered under
 * {@code rkey}, holding partitions {@code [startPartition, endPartition)} of one map output (a run of
 * contiguous partitions is one block, as Spark's batch fetch asks). An empty block has length 0 and
 * needs no read.
 */
public record BlockDescriptor(int shuffleId, long mapId, int startPartition, int endPartition, long address,
                              long length, int rkey) {

    public org.rdmashuffle.core.BlockId blockId() {
        return new org.rdmashuffle.core.BlockId(shuffleId, mapId, startPartition, endPartition);
    }

    public boolean isEmpty() {
        return length == 0;
    }
}
