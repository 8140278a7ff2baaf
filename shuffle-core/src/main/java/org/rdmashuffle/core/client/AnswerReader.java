package org.rdmashuffle.core.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import org.rdmashuffle.core.client.AwaitedRequests.Request;
import org.rdmashuffle.core.protocol.MalformedMessageException;
import org.rdmashuffle.core.protocol.Message;

/**
 * Reads one message of a {@link PeerFetcher}'s peer against what it awaits: a FetchResponse's
 * descriptors become queued reads ({@link DescribedReads}), an ErrorResponse refuses its block (or
 * its request's), anything else breaks the connection. It changes the fetcher's tables and says what
 * is left to do outside the lock ({@link Answer}). Runs under the fetcher's lock, on a poller thread.
 */
final class AnswerReader {
    private final AwaitedRequests awaiting;
    private final DescribedReads described;
    private final LayoutCache layouts;
    private final Set<PiecedBlock> pieced;

    AnswerReader(AwaitedRequests awaiting, DescribedReads described, LayoutCache layouts, Set<PiecedBlock> pieced) {
        this.awaiting = awaiting;
        this.described = described;
        this.layouts = layouts;
        this.pieced = pieced;
    }

    /**
     * What a message leaves to do once the lock is let go: empty blocks to deliver, blocks the peer
     * refused (and why), a pieced block it refused to describe again, blocks to ask for again, or the
     * reason the connection is broken.
     */
    record Answer(List<Wanted> empty, List<Wanted> refused, List<Wanted> askAgain, PiecedBlock refusedPieces,
                  String refusal, BlockFetchException.Kind refusalKind, Throwable broken, List<Unread> unread) {
        Answer(List<Wanted> empty, List<Wanted> refused, List<Wanted> askAgain, PiecedBlock refusedPieces,
               String refusal, BlockFetchException.Kind refusalKind, Throwable broken) {
            this(empty, refused, askAgain, refusedPieces, refusal, refusalKind, broken, List.of());
        }
    }

    /** A block described in a way it cannot be read (longer than any block can be), and why: it fails alone. */
    record Unread(Wanted wanted, String reason) {
    }

    /**
     * Reads {@code message}. If reading it throws (a bug, or input no check caught), the request it
     * answers is awaited again before the throw goes on, so its blocks fail with the connection (the
     * router fails it: {@link org.rdmashuffle.core.transport.ConnectionHandler#onCallbackFailed})
     * rather than being lost.
     */
    Answer read(Message message) {
        long answered = message instanceof Message.FetchResponse r ? r.requestId()
                : message instanceof Message.ErrorResponse e && e.requestId() != Message.CONNECTION_ERROR ? e.requestId() : -1;
        Request awaited = answered < 0 ? null : awaiting.peek(answered);
        try {
            return readAnswer(message);
        } catch (RuntimeException | Error e) {
            if (awaited != null && awaiting.peek(answered) == null) {
                awaiting.putBack(answered, awaited);
            }
            throw e;
        }
    }

    private Answer readAnswer(Message message) {
        List<Wanted> empty = new ArrayList<>();
        List<Wanted> askAgain = new ArrayList<>();
        List<Unread> unread = new ArrayList<>(0);
        return switch (message) {
            case Message.FetchResponse r -> {
                Request req = awaiting.take(r.requestId());
                Throwable broken;
                if (req == null) {
                    broken = new MalformedMessageException("a response to request " + r.requestId() + ", which is not awaited");
                } else if (r.blocks().size() != req.blocks().size() && !partial(r, req)) {
                    awaiting.putBack(r.requestId(), req); // failed with the connection
                    broken = new MalformedMessageException("response " + r.requestId() + " describes " + r.blocks().size()
                            + " blocks for a request of " + req.blocks().size());
                } else {
                    broken = req.refreshing() != null ? described.redescribed(req.refreshing(), r)
                            : described.fromAnswer(req, r, empty, unread);
                    if (broken != null) {
                        awaiting.putBack(r.requestId(), req); // its blocks fail with the connection
                    } else {
                        // A held answer may describe the first blocks only (what the peer's registered memory
                        // held at once): the others are asked for again, and wait there for room.
                        askAgain.addAll(req.blocks().subList(r.blocks().size(), req.blocks().size()));
                        described.wake(req, r, empty, askAgain);
                    }
                }
                yield new Answer(empty, null, askAgain, null, null, null, broken, broken == null ? unread : List.of());
            }
            case Message.ErrorResponse e when e.requestId() == Message.CONNECTION_ERROR ->
                    broken(new java.io.IOException("the peer closed the connection: " + e.reason()));
            case Message.ErrorResponse e -> refusal(e, empty, askAgain);
            case Message.FetchRequest q -> broken(new MalformedMessageException("a fetch request on a fetching connection"));
            case Message.Release q -> broken(new MalformedMessageException("a release on a fetching connection"));
        };
    }

    /** A held answer to a request of several blocks may describe its first ones, at least one. */
    private static boolean partial(Message.FetchResponse r, Request req) {
        return r.held() && req.refreshing() == null && !r.blocks().isEmpty() && r.blocks().size() < req.blocks().size();
    }

    private Answer refusal(Message.ErrorResponse e, List<Wanted> empty, List<Wanted> askAgain) {
        Request req = awaiting.take(e.requestId());
        Wanted named = req == null || e.block() == null ? null
                : req.blocks().stream().filter(w -> w.id.equals(e.block())).findFirst().orElse(null);
        if (req == null) {
            return broken(new MalformedMessageException("an error for request " + e.requestId() + ", which is not awaited"));
        }
        if (e.block() != null && named == null) {
            awaiting.putBack(e.requestId(), req); // its blocks fail with the connection
            return broken(new MalformedMessageException("an error for request " + e.requestId() + " about " + e.block()
                    + ", which it did not ask for"));
        }
        BlockFetchException.Kind kind = e.kind() == Message.ErrorKind.NO_SUCH_OUTPUT ? BlockFetchException.Kind.NO_SUCH_OUTPUT
                : BlockFetchException.Kind.REFUSED;
        for (Wanted w : named == null ? req.blocks() : List.of(named)) {
            layouts.forget(w.id.shuffleId(), w.id.mapId()); // gone or refused: ask next time
        }
        List<Wanted> refused = null;
        PiecedBlock refusedPieces = null;
        if (req.refreshing() != null) {
            refusedPieces = pieced.contains(req.refreshing()) ? req.refreshing() : null;
        } else {
            // About one block: the peer looked no further, so the others are asked again.
            refused = named == null ? req.blocks() : List.of(named);
            if (named != null) {
                askAgain.addAll(req.blocks());
                askAgain.remove(named);
            }
        }
        described.wake(req, null, empty, askAgain); // after the forgets above: what waited is asked for
        return new Answer(empty, refused, askAgain, refusedPieces, e.reason(), kind, null);
    }

    private static Answer broken(Throwable why) {
        return new Answer(List.of(), null, List.of(), null, null, null, why);
    }
}
