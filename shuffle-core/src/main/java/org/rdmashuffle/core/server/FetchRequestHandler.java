package org.rdmashuffle.core.server;

import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.rdmashuffle.core.metrics.Refusal;
import org.rdmashuffle.core.metrics.ServedCounts;
import org.rdmashuffle.core.protocol.BlockDescriptor;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.protocol.MapOutputLayout;
import org.rdmashuffle.core.protocol.Message;

/**
 * Answers a reducer's FetchRequest from the registry: one descriptor per block, or an ErrorResponse
 * about the first block that cannot be served — {@code NO_SUCH_OUTPUT} for an unknown map output,
 * {@code REFUSED} for partitions beyond the output, registered memory or index heap exhausted, a file
 * that cannot be mapped, a lookup that timed out. The reducer asks again for the request's other
 * blocks. Never throws for a bad request.
 *
 * <p>What a request costs a shared thread is bounded by the request's own size: answering it where it
 * arrives (the completion poller, {@link #answerIfReady}) is a constant per block; the slow work it
 * needs (outputs found on disk, files registered) is done a few outputs per turn of a server thread
 * ({@link #answerInTurns}), so a request naming thousands of outputs to find takes many short turns,
 * each other application getting its own in between, not minutes of one thread.
 *
 * <p>The reducer is told the block and the kind of failure, never a path, a size or an owner: those
 * go to this node's log. A tenant probing with crafted map ids learns nothing about the files here.
 */
public final class FetchRequestHandler {
    private static final System.Logger LOG = System.getLogger(FetchRequestHandler.class.getName());
    /** Rounds over a request's blocks before it is refused because its outputs do not stay registered together. */
    static final int MAX_PASSES = 3;

    private final MapOutputRegistry registry;
    /** A tenant chooses how many of its requests are refused: logged once a minute, with a count. */
    private final org.rdmashuffle.verbs.util.RepeatedWarning refusals =
            new org.rdmashuffle.verbs.util.RepeatedWarning(LOG, 60, java.util.concurrent.TimeUnit.SECONDS);

    /** What this application's reducers were answered and refused: the node's per-application figures. */
    private final ServedCounts served = new ServedCounts();

    public FetchRequestHandler(MapOutputRegistry registry) {
        this.registry = registry;
    }

    /** What this handler's application was served and refused, since it started. */
    public ServedCounts.Snapshot served() {
        return served.snapshot();
    }

    /** {@code answer} was posted to its reducer: counted as served now (an answer never sent is not). */
    public void sent(Message.FetchResponse answer) {
        served.answered(answer.blocks());
    }

    /**
     * The answer to a request naming more blocks than an answer on its connection always holds ({@code
     * fitting}): refused whole, before anything is described. A reducer of this release never asks for
     * more; a held answer's reducer is answered its first {@code fitting} blocks instead (the caller's).
     */
    public Message tooManyBlocks(String app, Message.FetchRequest request, int fitting) {
        served.refused(Refusal.REQUEST_TOO_LARGE);
        refusals.warn("rdma-shuffle: refused a request of " + request.blocks().size() + " blocks" + (app.isEmpty() ? "" : " of " + app)
                + ": an answer on its connection holds at most " + fitting);
        return new Message.ErrorResponse(request.requestId(), "a request of " + request.blocks().size()
                + " blocks, more than an answer to this connection's receive buffer holds (" + fitting + "): ask for fewer");
    }

    /** Where a request answered over several turns has got to, and the slow work it waits for (no thread held). */
    public static final class Progress {
        private int next;
        private int passes;
        /** Since when it has waited for the slow work of its next block (0: it does not wait). */
        private long waitingSince;
        /**
         * The slow work of its next block (a search, another request's registration) it waits for before
         * its next turn, which looks at how it ended: a search is forgotten once done, and asking again
         * would start another. Null if it waits for nothing.
         */
        private CompletableFuture<MapOutput> awaited;
        /** Bind slots for the memory windows its answer needs (reads through windows only); null if it waits for none. */
        private CompletableFuture<?> windowRoom;
        /** A held answer's first block finds no registered memory: a release of the registry's outputs; null if it waits for none. */
        private CompletableFuture<?> registeredRoom;
        /** Since when its first block has waited for registered memory (0: it does not). */
        private long roomSince;

        /** What the request waits for before its next turn; null: the next turn may come at once. */
        public CompletableFuture<?> waitingFor() {
            return awaited != null ? awaited : windowRoom != null ? windowRoom : registeredRoom;
        }
    }

    /** Answers a request of a reducer authenticated for {@code app} (it sees that application's outputs only), in one go. */
    public Message answer(String app, Message.FetchRequest request, int layoutBytes) {
        Progress p = new Progress();
        Message m;
        while ((m = answerInTurns(app, request, layoutBytes, p, Integer.MAX_VALUE, null, null)) == null) {
            CompletableFuture<?> f = p.waitingFor();
            if (f != null) {
                try {
                    f.get(registry.lookupTimeoutNanos(), TimeUnit.NANOSECONDS);
                } catch (ExecutionException | TimeoutException failedOrLate) {
                    // the next turn says so
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return new Message.ErrorResponse(request.requestId(), "the server is closing");
                }
            }
        }
        return m;
    }

    /**
     * One turn at {@code request}: the slow work of at most {@code maxSlowOutputs} of its blocks that
     * need it (from where the last turn stopped), and once none is left the answer, as {@link
     * #answerIfReady} gives it; null when another turn is needed — at once, or (if {@link
     * Progress#waitingFor} gives something) once a search on disk or another request's registration
     * of the next block's output is done: no thread waits for those. A block whose slow work is not done
     * within the lookup timeout is refused. A request whose outputs keep being released before the last
     * is described (registered memory too short for all of them) is refused after {@value #MAX_PASSES}
     * passes. {@code held}: the answer holds what it describes for its connection (null: leased), and
     * is a held answer; the caller gives its holds back if it sends anything else.
     */
    public Message answerInTurns(String app, Message.FetchRequest request, int layoutBytes, Progress p, int maxSlowOutputs,
                                 ServingWindows.Keys keys, HeldAnswer held) {
        List<BlockId> blocks = request.blocks();
        int slow = 0;
        while (p.next < blocks.size()) {
            BlockId b = blocks.get(p.next);
            try {
                if (registry.describeIfRegistered(app, b.shuffleId(), b.mapId(), b.startPartition(), b.endPartition(), null,
                        held) == null) {
                    if (slow == maxSlowOutputs) {
                        return null; // the rest in a later turn
                    }
                    slow++;
                    CompletableFuture<MapOutput> pending = p.awaited != null ? p.awaited
                            : registry.pendingWork(app, b.shuffleId(), b.mapId());
                    p.awaited = null;
                    if (pending != null) {
                        if (!pending.isDone()) {
                            long now = System.nanoTime();
                            if (p.waitingSince == 0) {
                                p.waitingSince = now;
                            } else if (now - p.waitingSince >= registry.lookupTimeoutNanos()) {
                                throw new LookupTimeoutException("the lookup or registration of map output " + b.mapId()
                                        + " of shuffle " + b.shuffleId() + " took longer than "
                                        + registry.lookupTimeoutNanos() / 1_000_000 + " ms");
                            }
                            p.awaited = pending;
                            return null;
                        }
                        p.waitingSince = 0;
                        if (pending.join() == null) { // a search that found nothing
                            throw new NoSuchMapOutputException("no map output " + b.mapId() + " of shuffle " + b.shuffleId()
                                    + " of " + app + " is here");
                        }
                        continue; // found, or registered by another request: look again
                    }
                    registry.describe(app, b.shuffleId(), b.mapId(), b.startPartition(), b.endPartition(), held);
                }
            } catch (CompletionException e) {
                return refusal(app, request, b, e.getCause() instanceof RuntimeException r ? r
                        : new IllegalStateException(e.getCause()));
            } catch (RegisteredMemoryExhaustedException e) {
                return held == null ? refusal(app, request, b, e) : roomFor(app, request, p, keys, held, e);
            } catch (RuntimeException e) {
                return refusal(app, request, b, e);
            }
            p.next++;
        }
        p.registeredRoom = null;
        p.roomSince = 0;
        Message ready = answerIfReady(app, request, layoutBytes, keys, held);
        if (ready != null) {
            p.windowRoom = null;
            return ready;
        }
        if (keys != null && keys.wasShort()) {
            // Every bind slot of the application is in flight: post the binds reserved so far (they
            // complete, and slots come back), and take the next turn when some have.
            long now = System.nanoTime();
            if (p.windowRoom == null) {
                p.waitingSince = now;
            } else if (now - p.waitingSince >= registry.lookupTimeoutNanos()) {
                served.refused(Refusal.BUSY);
                return new Message.ErrorResponse(request.requestId(), "the server is busy with this application's "
                        + "requests: try again");
            }
            keys.commit();
            p.windowRoom = keys.room();
            return null;
        }
        p.windowRoom = null;
        if (++p.passes >= MAX_PASSES) {
            refusals.warn("rdma-shuffle: refused a request of " + blocks.size() + " blocks"
                    + (app.isEmpty() ? "" : " of " + app) + ": its outputs were released before all were described");
            served.refused(Refusal.REQUEST_TOO_LARGE);
            return new Message.ErrorResponse(request.requestId(), "the server's registered memory cannot hold every output "
                    + "of this request at once: ask for fewer blocks");
        }
        p.next = 0;
        return null;
    }

    /**
     * A held answer's block {@code p.next} finds no registered memory: the blocks before it are described
     * and held, and go now as a held answer of those alone (the reducer asks for the others again, and its
     * releases make room for them); if it is the first, it waits for a release of this registry's outputs,
     * at most the lookup timeout, then is refused as without holds. Null while it waits.
     */
    private Message roomFor(String app, Message.FetchRequest request, Progress p, ServingWindows.Keys keys, HeldAnswer held,
                            RegisteredMemoryExhaustedException full) {
        BlockId b = request.blocks().get(p.next);
        if (p.next > 0) {
            Message.FetchRequest first = new Message.FetchRequest(request.requestId(), request.shuffleId(),
                    request.blocks().subList(0, p.next), false);
            Message m = answerIfReady(app, first, 0, keys, held);
            if (m != null) {
                p.registeredRoom = null;
                return m;
            }
            return refusal(app, request, b, full); // a window's bind slots short as well: not worth waiting twice
        }
        long now = System.nanoTime();
        if (p.roomSince == 0) {
            p.roomSince = now;
        } else if (now - p.roomSince >= registry.lookupTimeoutNanos()) {
            p.registeredRoom = null;
            return refusal(app, request, b, full);
        }
        p.registeredRoom = registry.nextRelease();
        return null;
    }

    /**
     * The answer if no block needs slow work (an output found on disk, a file registered); null
     * otherwise. The completion poller answers these itself: a constant per block. Every key is a
     * window of {@code keys} (null: the regions' own); null also when the application has no bind slot
     * free for a window it needs ({@code keys.wasShort()} says so). The caller commits {@code keys}
     * before the answer goes. {@code held}: as for {@link #answerInTurns}; an output whose layout goes is
     * kept for a lease as well, so a held answer carries none while the registry is {@linkplain
     * MapOutputRegistry#crowded crowded}.
     */
    public Message answerIfReady(String app, Message.FetchRequest request, int layoutBytes, ServingWindows.Keys keys,
                                 HeldAnswer held) {
        if (keys != null) {
            keys.beginAnswer();
        }
        List<BlockDescriptor> described = new ArrayList<>(request.blocks().size());
        for (BlockId b : request.blocks()) {
            try {
                BlockDescriptor d = registry.describeIfRegistered(app, b.shuffleId(), b.mapId(), b.startPartition(),
                        b.endPartition(), keys, held);
                if (d == null) {
                    return null;
                }
                described.add(d);
            } catch (RuntimeException e) {
                return refusal(app, request, b, e);
            }
        }
        // A layout keeps its output registered for a lease: none goes with a held answer while registered
        // memory is crowded (decided now, with this answer's outputs registered), so those outputs go once read.
        int layoutRoom = held != null && registry.crowded() ? 0 : layoutBytes;
        return new Message.FetchResponse(request.requestId(), described, layouts(app, described, layoutRoom, keys),
                held != null);
    }

    /** The error about block {@code b}; an exception that is not about the request (a bug) is rethrown. */
    private Message refusal(String app, Message.FetchRequest request, BlockId b, RuntimeException e) {
        String kind = kindOf(e);
        if (kind == null) {
            throw e;
        }
        served.refused(refusalOf(e));
        refusals.warn("rdma-shuffle: refused " + b + (app.isEmpty() ? "" : " of " + app) + " (" + kind + "): " + e.getMessage());
        return new Message.ErrorResponse(request.requestId(),
                e instanceof NoSuchMapOutputException ? Message.ErrorKind.NO_SUCH_OUTPUT : Message.ErrorKind.REFUSED, b,
                b + ": " + kind);
    }

    /** The layouts of the described blocks' outputs, one per output, while they fit in {@code budget} bytes. */
    private List<MapOutputLayout> layouts(String app, List<BlockDescriptor> blocks, int budget, ServingWindows.Keys keys) {
        if (budget <= 0) {
            return List.of();
        }
        List<MapOutputLayout> layouts = new ArrayList<>();
        Set<Long> seen = new HashSet<>();
        for (BlockDescriptor d : blocks) {
            if (budget <= 0) {
                break;
            }
            if (d.isEmpty() || !seen.add(d.mapId())) {
                continue;
            }
            MapOutputRegistry.SizedLayout l = registry.layoutIfRegistered(app, d.shuffleId(), d.mapId(), budget, keys);
            if (l != null && l.layout().partitions() > 1) {
                layouts.add(l.layout());
                budget -= l.bytes();
            }
        }
        return layouts;
    }

    /** The kind of refusal operators count, for an exception {@link #kindOf} names. */
    static Refusal refusalOf(RuntimeException e) {
        return switch (e) {
            case NoSuchMapOutputException x -> Refusal.NO_SUCH_OUTPUT;
            case PartitionRangeException x -> Refusal.PARTITION_RANGE;
            case RegisteredMemoryExhaustedException x -> Refusal.REGISTERED_MEMORY_EXHAUSTED;
            case IndexMemoryExhaustedException x -> Refusal.INDEX_MEMORY_EXHAUSTED;
            case LookupTimeoutException x -> Refusal.LOOKUP_TIMEOUT;
            case ServerBusyRefusal x -> Refusal.BUSY;
            case UncheckedIOException io -> io.getCause() instanceof org.rdmashuffle.core.server.files.RefusedFileException
                    ? Refusal.FILE_REFUSED : Refusal.FILE_UNREADABLE;
            case org.rdmashuffle.verbs.VerbsException x -> Refusal.REGISTRATION_FAILED;
            case IllegalStateException x -> Refusal.CLOSING;
            default -> Refusal.INDEX_INCONSISTENT; // IllegalArgumentException: kindOf refuses nothing else
        };
    }

    /** What a reducer is told about a failure: a fixed phrase per kind; null for an exception that is a bug. */
    static String kindOf(RuntimeException e) {
        return switch (e) {
            case NoSuchMapOutputException x -> "no such map output of this application here";
            case PartitionRangeException x -> "partitions outside the map output";
            case RegisteredMemoryExhaustedException x -> "the server's registered memory is exhausted";
            case IndexMemoryExhaustedException x -> "the server holds as many map outputs of this application as it may";
            case LookupTimeoutException x -> "the map output was not found or registered in time";
            case ServerBusyRefusal x -> "the server is busy with this application's requests: try again";
            case UncheckedIOException io -> io.getCause() instanceof org.rdmashuffle.core.server.files.RefusedFileException
                    ? "map output file refused (not a regular file of the application's own)"
                    : "map output files unreadable or inconsistent";
            case org.rdmashuffle.verbs.VerbsException x -> "the device could not register the map output";
            case IllegalStateException x -> "the server is closing";
            case IllegalArgumentException x -> "map output index inconsistent with its data file";
            default -> null;
        };
    }
}
