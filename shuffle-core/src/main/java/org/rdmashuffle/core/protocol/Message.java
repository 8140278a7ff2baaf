package org.rdmashuffle.core.protocol;

import java.util.List;
import java.util.Objects;



/**
 * Metadata messages between a reducer and a serving process, sent as SEND/RECV over the QPs.
 * Each carries the requester's id so responses match requests on a connection.
 */
public sealed interface Message {

    /** The request id of an error about the whole connection rather than one request; real ids start at 1. */
    long CONNECTION_ERROR = 0;

    long requestId();

    /** Block descriptors for these blocks of one shuffle, answered in one {@link FetchResponse}. */
    /**
     * Asks for blocks of one shuffle. {@code withLayouts}: the answer may carry the outputs' layouts
     * (false when a request already on the way asked for them: each is sent once, not per request).
     */
    record FetchRequest(long requestId, int shuffleId, List<BlockId> blocks, boolean withLayouts) implements Message {
        public FetchRequest(long requestId, int shuffleId, List<BlockId> blocks) {
            this(requestId, shuffleId, blocks, true);
        }

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

    /**
     * The descriptors, one per requested block, in request order; and the layouts of (some of) their
     * map outputs, for the reducer to read their other partitions without asking again.
     */
    /**
     * {@code held} (control protocol version 5 and later, docs/compatibility.md): the server keeps the
     * outputs whose blocks are described here registered for this connection until the reducer sends a
     * {@link Release} for them (each output once per answer) or the lease ends, whichever is first; an
     * output whose layout is sent stays registered for the lease (the reducer reads through it for half
     * of one). A held answer may describe only the first blocks of its request (at least one: what the
     * server's registered memory held at once); the reducer asks for the others again. Not held (version
     * 3 and 4): every output described stays registered for the lease.
     */
    record FetchResponse(long requestId, List<BlockDescriptor> blocks, List<MapOutputLayout> layouts, boolean held)
            implements Message {
        public FetchResponse {
            blocks = List.copyOf(blocks);
            layouts = List.copyOf(layouts);
        }

        public FetchResponse(long requestId, List<BlockDescriptor> blocks, List<MapOutputLayout> layouts) {
            this(requestId, blocks, layouts, false);
        }

        public FetchResponse(long requestId, List<BlockDescriptor> blocks) {
            this(requestId, blocks, List.of());
        }

        /** The same answer without layouts: for a reducer whose receive buffer cannot hold them. */
        public FetchResponse withoutLayouts() {
            return layouts.isEmpty() ? this : new FetchResponse(requestId, blocks, List.of(), held);
        }
    }

    /**
     * A reducer is done reading outputs a server described in held answers ({@link FetchResponse#held}):
     * each entry gives back {@code answers} of the held answers that described output {@code mapId} of
     * shuffle {@code shuffleId}, none of whose reads is still posted or queued. The server may deregister
     * an output once no connection holds it and no unheld answer's lease covers it. No answer is sent.
     */
    record Release(List<Released> outputs) implements Message {
        public Release {
            outputs = List.copyOf(outputs);
            if (outputs.isEmpty()) {
                throw new IllegalArgumentException("a release names at least one output");
            }
        }

        /** Not a request: nothing answers it. */
        @Override
        public long requestId() {
            return CONNECTION_ERROR;
        }
    }

    /** One output a {@link Release} gives back, and how many held answers that described it. */
    record Released(int shuffleId, long mapId, int answers) {
        public Released {
            if (shuffleId < 0 || answers <= 0) {
                throw new IllegalArgumentException("released map " + mapId + " of shuffle " + shuffleId + " for " + answers
                        + " answers");
            }
        }
    }

    /** Why a request was not answered with descriptors, for the reducer to act on (not only to print). */
    enum ErrorKind {
        /** The peer has no such map output (never written there, lost, or of another application). */
        NO_SUCH_OUTPUT,
        /** The peer has the output but will not serve it by RDMA (cannot register it, bad partition range, ...). */
        REFUSED
    }

    /**
     * The request failed; {@code reason} says why, for the reducer's error. With a {@code block}, the
     * error is about that block alone and the request's other blocks were not looked at: the reducer
     * asks for them again. Without one it is about every block of the request. Request id {@link
     * #CONNECTION_ERROR} speaks of the connection (e.g. a malformed message): the peer closes it next.
     */
    record ErrorResponse(long requestId, ErrorKind kind, BlockId block, String reason) implements Message {
        public ErrorResponse {
            Objects.requireNonNull(kind, "kind");
            Objects.requireNonNull(reason, "reason");
        }

        /** An error about the whole request (or connection). */
        public ErrorResponse(long requestId, String reason) {
            this(requestId, ErrorKind.REFUSED, null, reason);
        }
    }
}
