package org.rdmashuffle.core.client;

/**
 * A map output's key (shuffle, map), mutable so that a lookup can fill in one probe key instead of
 * making a key per block. Keys put into a map are never changed.
 */
final class OutputKey {
    int shuffleId;
    long mapId;

    OutputKey(int shuffleId, long mapId) {
        this.shuffleId = shuffleId;
        this.mapId = mapId;
    }

    /** Makes this probe name another output; returns it. */
    OutputKey of(int shuffleId, long mapId) {
        this.shuffleId = shuffleId;
        this.mapId = mapId;
        return this;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof OutputKey k && k.shuffleId == shuffleId && k.mapId == mapId;
    }

    @Override
    public int hashCode() {
        return 31 * shuffleId + Long.hashCode(mapId);
    }
}
