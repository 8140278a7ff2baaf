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
 *
 * <p>The reducer is told the block and the kind of failure, never a path, a size or an owner: those
 * go to this node's log. A tenant probing with crafted map ids learns nothing about the files here.
 */
public final class FetchRequestHandler {
    private static final System.Logger LOG = System.getLogger(FetchRequestHandler.class.getName());

    private final MapOutputRegistry registry;

    public FetchRequestHandler(MapOutputRegistry registry) {
        this.registry = registry;
    }

    public Message answer(Message.FetchRequest request) {
        return answer(MapOutputRegistry.OWN, request);
    }

    /** Answers a request of a reducer authenticated for {@code app}: it sees that application's outputs only. */
    public Message answer(String app, Message.FetchRequest request) {
        return answer(app, request, true, 0);
    }

    /**
     * As {@link #answer(String, Message.FetchRequest)}, adding the layouts of the outputs described
     * (as many as fit in {@code layoutBytes}), so the reducer reads their other partitions without asking.
     */
    public Message answer(String app, Message.FetchRequest request, int layoutBytes) {
        return answer(app, request, true, layoutBytes);
    }

    /**
     * As {@link #answer(String, Message.FetchRequest, int)} if no block needs slow work (an output
     * found on disk, a file registered); null otherwise. The completion poller answers these itself.
     */
    public Message answerIfReady(String app, Message.FetchRequest request, int layoutBytes) {
        return answer(app, request, false, layoutBytes);
    }

    private Message answer(String app, Message.FetchRequest request, boolean mayBlock, int layoutBytes) {
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
                String kind = kindOf(e);
                LOG.log(System.Logger.Level.INFO, () -> "rdma-shuffle: refused " + b + (app.isEmpty() ? "" : " of " + app)
                        + " (" + kind + "): " + e.getMessage());
                return new Message.ErrorResponse(request.requestId(),
                        e instanceof NoSuchMapOutputException ? Message.ErrorKind.NO_SUCH_OUTPUT : Message.ErrorKind.REFUSED, b,
                        b + ": " + kind);
            }
        }
        return new Message.FetchResponse(request.requestId(), blocks, layouts(app, blocks, layoutBytes));
    }

    /** The layouts of the described blocks' outputs, one per output, while they fit in {@code budget} bytes. */
    private List<MapOutputLayout> layouts(String app, List<BlockDescriptor> blocks, int budget) {
        List<MapOutputLayout> layouts = new ArrayList<>();
        java.util.Set<Long> seen = new java.util.HashSet<>();
        for (BlockDescriptor d : blocks) {
            if (budget <= 0) {
                break;
            }
            if (d.isEmpty() || !seen.add(d.mapId())) {
                continue;
            }
            MapOutputLayout l = registry.layoutIfRegistered(app, d.shuffleId(), d.mapId());
            if (l != null && l.partitions() > 1 && l.encodedSize() <= budget) {
                layouts.add(l);
                budget -= l.encodedSize();
            }
        }
        return layouts;
    }

    /** What a reducer is told about a failure: a fixed phrase per kind. */
    static String kindOf(RuntimeException e) {
        if (e instanceof NoSuchMapOutputException) {
            return "no such map output of this application here";
        }
        if (e instanceof PartitionRangeException) {
            return "partitions outside the map output";
        }
        if (e instanceof RegisteredMemoryExhaustedException) {
            return "the server's registered memory is exhausted";
        }
        if (e instanceof UncheckedIOException io) {
            return io.getCause() instanceof org.rdmashuffle.core.server.files.RefusedFileException
                    ? "map output file refused (not a regular file of the application's own)"
                    : "map output files unreadable or inconsistent";
        }
        if (e instanceof org.rdmashuffle.verbs.VerbsException) {
            return "the device could not register the map output";
        }
        if (e instanceof IllegalStateException) {
            return "the server is closing";
        }
        return "map output index inconsistent with its data file";
    }
}
