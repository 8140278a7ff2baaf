package org.rdmashuffle.core.server;

import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

import org.rdmashuffle.core.BlockId;
import org.rdmashuffle.core.protocol.Message;

/**
 * Answers a reducer's FetchRequest from the registry: one descriptor per block, or an ErrorResponse
 * about the first block that cannot be served — {@code NO_SUCH_OUTPUT} for an unknown map output,
 * {@code REFUSED} for partitions beyond the output, registered memory exhausted, a file that cannot
 * be mapped. The reducer asks again for the request's other blocks. Never throws for a bad request.
 */
public final class FetchRequestHandler {
    /** Reasons are cut to this many characters so an error always fits a receive buffer. */
    static final int MAX_REASON = 900;

    private final MapOutputRegistry registry;

    public FetchRequestHandler(MapOutputRegistry registry) {
        this.registry = registry;
    }

    public Message answer(Message.FetchRequest request) {
        return answer(MapOutputRegistry.OWN, request);
    }

    /** Answers a request of a reducer authenticated for {@code app}: it sees that application's outputs only. */
    public Message answer(String app, Message.FetchRequest request) {
        return answer(app, request, true);
    }

    /**
     * As {@link #answer(String, Message.FetchRequest)} if no block needs slow work (an output found on
     * disk, a file registered); null otherwise. The completion poller answers these itself.
     */
    public Message answerIfReady(String app, Message.FetchRequest request) {
        return answer(app, request, false);
    }

    private Message answer(String app, Message.FetchRequest request, boolean mayBlock) {
        List<BlockDescriptor> blocks = new ArrayList<>(request.blocks().size());
        for (BlockId b : request.blocks()) {
            try {
                BlockDescriptor d = mayBlock
                        ? registry.describe(app, b.shuffleId(), b.mapId(), b.startPartition(), b.endPartition())
                        : registry.describeIfRegistered(app, b.shuffleId(), b.mapId(), b.startPartition(), b.endPartition());
                if (d == null) {
                    return null;
                }
                blocks.add(d);
            } catch (IllegalArgumentException | IllegalStateException | RegisteredMemoryExhaustedException
                     | UncheckedIOException | org.rdmashuffle.verbs.VerbsException e) {
                String reason = b + ": " + e.getMessage();
                return new Message.ErrorResponse(request.requestId(),
                        e instanceof NoSuchMapOutputException ? Message.ErrorKind.NO_SUCH_OUTPUT : Message.ErrorKind.REFUSED, b,
                        reason.length() > MAX_REASON ? reason.substring(0, MAX_REASON) : reason);
            }
        }
        return new Message.FetchResponse(request.requestId(), blocks);
    }
}
