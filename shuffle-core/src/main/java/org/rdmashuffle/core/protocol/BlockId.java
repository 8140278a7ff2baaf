package org.rdmashuffle.core.protocol;

/**
 * A shuffle block: partitions {@code [startPartition, endPartition)} of one map output. A single
 * partition is {@code [r, r + 1)}; a longer run is what Spark's batch fetch asks for.
 */
public record BlockId(int shuffleId, long mapId, int startPartition, int endPartition) {
    public BlockId {
        if (shuffleId < 0 || startPartition < 0 || endPartition <= startPartition) {
            throw new IllegalArgumentException("block of shuffle " + shuffleId + ", map " + mapId + ", partitions ["
                    + startPartition + ", " + endPartition + ")");
        }
    }

    public static BlockId of(int shuffleId, long mapId, int partition) {
        return new BlockId(shuffleId, mapId, partition, partition + 1);
    }

    @Override
    public String toString() {
        return endPartition == startPartition + 1
                ? "shuffle_" + shuffleId + "_" + mapId + "_" + startPartition
                : "shuffle_" + shuffleId + "_" + mapId + "_" + startPartition + "_" + endPartition;
    }
}
