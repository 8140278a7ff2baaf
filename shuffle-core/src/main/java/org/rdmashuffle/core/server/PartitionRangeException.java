package org.rdmashuffle.core.server;

/** A reducer asked for partitions its map output does not have. */
public final class PartitionRangeException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public PartitionRangeException(String message) {
        super(message);
    }
}
