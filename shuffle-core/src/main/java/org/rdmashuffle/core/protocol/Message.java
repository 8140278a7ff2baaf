package org.rdmashuffle.core.protocol;

import java.util.List;
import java.util.Objects;

import org.rdmashuffle.core.server.BlockDescriptor;

/**
 * Metadata messages between a reducer and a serving process, sent as SEND/RECV over the QPs.
 * Each carries the requester's id so responses match requests on a connection.
 */
public sealed interface Message {

    long requestId();

    /** Block descriptors for partitions {@code [startPartition, endPartition)} of these map outputs. */
    record FetchRequest(long requestId, int shuffleId, long[] mapIds, int startPartition, int endPartition) implements Message {
        public FetchRequest {
            Objects.requireNonNull(mapIds, "mapIds");
            mapIds = mapIds.clone();
        }

        @Override
        public long[] mapIds() {
            return mapIds.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof FetchRequest r && r.requestId == requestId && r.shuffleId == shuffleId
                    && java.util.Arrays.equals(r.mapIds, mapIds) && r.startPartition == startPartition
                    && r.endPartition == endPartition;
        }

        @Override
        public int hashCode() {
            return Long.hashCode(requestId) * 31 + java.util.Arrays.hashCode(mapIds);
        }

        @Override
        public String toString() {
            return "FetchRequest[id " + requestId + ", shuffle " + shuffleId + ", " + mapIds.length + " maps, partitions ["
                    + startPartition + ", " + endPartition + ")]";
        }
    }

    /** The descriptors, one per requested map output, in request order. */
    record FetchResponse(long requestId, List<BlockDescriptor> blocks) implements Message {
        public FetchResponse {
            blocks = List.copyOf(blocks);
        }
    }

    /** The request failed; {@code reason} says why, for the reducer's error. */
    record ErrorResponse(long requestId, String reason) implements Message {
        public ErrorResponse {
            Objects.requireNonNull(reason, "reason");
        }
    }
}
