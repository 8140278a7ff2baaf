package org.rdmashuffle.core.protocol;

import java.util.List;
import java.util.Objects;

import org.rdmashuffle.core.BlockId;

import org.rdmashuffle.core.server.BlockDescriptor;

/**
 * Metadata messages between a reducer and a serving process, sent as SEND/RECV over the QPs.
 * Each carries the requester's id so responses match requests on a connection.
 */
public sealed interface Message {

    /** The request id of an error about the whole connection rather than one request; real ids start at 1. */
    long CONNECTION_ERROR = 0;

    long requestId();

    /** Block descriptors for these blocks of one shuffle, answered in one {@link FetchResponse}. */
    record FetchRequest(long requestId, int shuffleId, List<BlockId> blocks) implements Message {
        public FetchRequest {
            blocks = List.copyOf(blocks);
            for (BlockId b : blocks) {
                if (b.shuffleId() != shuffleId) {
                    throw new IllegalArgumentException(b + " is not a block of shuffle " + shuffleId);
                }
            }
        }

        @Override
        public String toString() {
            return "FetchRequest[id " + requestId + ", shuffle " + shuffleId + ", " + blocks.size() + " blocks]";
        }
    }

    /** The descriptors, one per requested block, in request order. */
    record FetchResponse(long requestId, List<BlockDescriptor> blocks) implements Message {
        public FetchResponse {
            blocks = List.copyOf(blocks);
        }
    }

    /**
     * The request failed; {@code reason} says why, for the reducer's error. Request id {@link
     * #CONNECTION_ERROR} speaks of the connection (e.g. a malformed message): the peer closes it next.
     */
    record ErrorResponse(long requestId, String reason) implements Message {
        public ErrorResponse {
            Objects.requireNonNull(reason, "reason");
        }
    }
}
