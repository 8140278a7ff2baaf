package org.rdmashuffle.core.client;

import java.util.List;
import java.util.Set;

import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.client.AwaitedRequests.Request;
import org.rdmashuffle.core.protocol.MalformedMessageException;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.protocol.BlockDescriptor;
import org.rdmashuffle.core.protocol.MapOutputLayout;

/**
 * Where a block is, made into reads in a {@link PeerFetcher}'s queue: from a descriptor in the peer's
 * answer or from its output's cached layout. A block that fits one fetch buffer is one read; a larger
 * one becomes a {@link PiecedBlock} with its first pieces queued. Called under the fetcher's lock,
 * with the fetcher's own queue, caches and spares.
 */
final class DescribedReads {
    /** Pieces of one large block read ahead of its consumer: its registered memory, whatever its size. */
    static final int PIECES_AHEAD = 4;

    private final ReadQueue queued;
    private final LayoutCache layouts;
    private final LayoutsAsked asked;
    private final Set<PiecedBlock> pieced;
    private final SpareReads spares;
    private final FetchContext context;
    private final PiecedBlock.Recycler recycler;
    /** Outputs of held answers, and the releases owed for them. */
    private final HeldOutputs held;
    private final long timeoutNanos;
    /**
     * The most a block read whole may have, and a piece of a larger one: a fetch buffer, less a page
     * where reads are page-aligned (a read's lead then fits, and pieces stay whole pages apart).
     */
    private final int pieceBytes;

    DescribedReads(ReadQueue queued, LayoutCache layouts, LayoutsAsked asked, Set<PiecedBlock> pieced, SpareReads spares,
                   FetchContext context, PiecedBlock.Recycler recycler, long timeoutNanos, boolean pageAlignedReads,
                   HeldOutputs held) {
        this.held = held;
        // Fetch buffers are at least 1 MiB (fetchBufferMemory), so a page less leaves whole pages.
        this.pieceBytes = context.buffers().slabBytes() - (pageAlignedReads ? org.rdmashuffle.core.transport.MemoryRegistration.PAGE : 0);
        this.queued = queued;
        this.layouts = layouts;
        this.asked = asked;
        this.pieced = pieced;
        this.spares = spares;
        this.context = context;
        this.recycler = recycler;
        this.timeoutNanos = timeoutNanos;
    }

    /**
     * Queues the read of {@code w} from its output's cached layout, if one is held and says where it
     * is; false if it has to be asked for (no layout, a block the layout does not hold, or one that
     * large: the answer says what is wrong with it).
     */
    boolean fromLayout(Wanted w, long now, List<Wanted> empty) {
        BlockId b = w.id;
        LayoutCache.Entry known = layouts.get(b.shuffleId(), b.mapId(), now);
        MapOutputLayout l = known == null ? null : known.layout();
        long from = l == null || !l.holds(b) ? -1 : l.offset(b.startPartition());
        long length = from < 0 ? -1 : l.offset(b.endPartition()) - from;
        if (length < 0 || ResponseCheck.tooLong(length, pieceBytes)) {
            return false;
        }
        read(w, l.address() + from, length, l.rkey(), length, known.describedAt(), now, empty, null);
        return true;
    }

    /**
     * Once an answer to {@code req} is taken in: the blocks that waited for the layouts it asked for
     * are read from the layouts now held, or go to {@code ask}.
     */
    void wake(Request req, Message.FetchResponse answer, List<Wanted> empty, List<Wanted> ask) {
        if (!req.withLayouts()) {
            return;
        }
        // How many of this shuffle's layouts an answer holds (none: MapReduce's outputs, or a peer crowded
        // for registered memory: then blocks ask at once instead of waiting for layouts that do not come).
        if (answer != null) {
            java.util.Set<Long> described = new java.util.HashSet<>();
            for (int i = 0; i < answer.blocks().size(); i++) { // a held answer may describe the first blocks only
                if (!answer.blocks().get(i).isEmpty()) {
                    described.add(req.blocks().get(i).id.mapId());
                }
            }
            asked.answeredWith(req.blocks().getFirst().id.shuffleId(), described.size(), answer.layouts().size());
        }
        long now = context.nanoTime();
        for (Wanted w : asked.answered(req.blocks())) {
            if (!fromLayout(w, now, empty)) {
                ask.add(w);
            }
        }
    }

    /**
     * Checks each descriptor against what was asked and queues its reads; returns what is wrong, if
     * anything (the connection fails). A block described longer than any can be goes to {@code tooLong}
     * with the reason, to fail alone.
     */
    Throwable fromAnswer(Request req, Message.FetchResponse r, List<Wanted> empty, List<AnswerReader.Unread> tooLong) {
        Throwable wrong = ResponseCheck.descriptors(r, req.blocks());
        if (wrong != null) {
            return wrong;
        }
        long now = context.nanoTime();
        // A held answer: each output it describes (a non-empty block of) is released once, when its reads are over.
        java.util.Map<Long, HeldOutputs.Output> holds = r.held() ? new java.util.HashMap<>() : null;
        for (int i = 0; i < r.blocks().size(); i++) { // all asked for, or the first of them (a held answer)
            BlockDescriptor d = r.blocks().get(i);
            Wanted w = req.blocks().get(i);
            HeldOutputs.Output hold = holds == null || d.isEmpty() ? null
                    : holds.computeIfAbsent(w.id.mapId(), map -> held.described(w.id.shuffleId(), map));
            String why = ResponseCheck.tooLong(r, w, d, pieceBytes);
            if (why != null) {
                tooLong.add(new AnswerReader.Unread(w, why));
            } else {
                read(w, d.address(), d.length(), d.rkey(), d.rawLength(), now, now, empty, hold);
            }
        }
        if (holds != null) {
            holds.values().forEach(held::settle); // any whose every block failed alone goes back now
        }
        for (MapOutputLayout l : r.layouts()) {
            if (ResponseCheck.agrees(l, req.blocks(), r)) {
                layouts.put(l, now);
            }
        }
        return null;
    }

    /**
     * Queues the read of one described block, {@code length} bytes at {@code address}
     * of region {@code rkey} (or, for an empty one, adds it to {@code empty}).
     */
    void read(Wanted w, long address, long length, int rkey, long rawLength, long describedAt, long now,
                           List<Wanted> empty, HeldOutputs.Output hold) {
        if (w.queuedSince < 0) {
            w.queuedSince = now;
        }
        if (length == 0) {
            empty.add(w);
        } else if (length <= pieceBytes) {
            Read r = spares.read(w, address, length, rkey, rawLength, describedAt, w.queuedSince);
            if (hold != null) {
                hold.start();
                r.hold = hold;
            }
            queued.add(r);
        } else {
            BlockDescriptor d = new BlockDescriptor(w.id.shuffleId(), w.id.mapId(), w.id.startPartition(),
                    w.id.endPartition(), address, length, rkey, rawLength);
            int ahead = (int) Math.max(1, Math.min(PIECES_AHEAD, context.buffers().limitBytes() / pieceBytes / 2));
            PiecedBlock p = new PiecedBlock(w, d, describedAt, pieceBytes, ahead, recycler, timeoutNanos);
            if (hold != null) { // counted as read while it has pieces to read, each piece as well
                hold.start();
                p.hold = hold;
            }
            pieced.add(p);
            for (; p.nextToQueue < p.window; p.nextToQueue++) {
                queued.add(p.pieceRead(p.nextToQueue, now, null));
            }
        }
    }

    /** A pieced block described again; its set-aside pieces go back in the queue with the new range. */
    Throwable redescribed(PiecedBlock p, Message.FetchResponse r) {
        BlockDescriptor d = r.blocks().getFirst();
        Throwable wrong = ResponseCheck.descriptor(r, p.wanted, d);
        if (wrong == null && d.length() != p.length) {
            wrong = new MalformedMessageException("response " + r.requestId() + " describes " + p.wanted.id + " as "
                    + d.length() + " bytes, where it was " + p.length);
        }
        if (wrong != null) {
            return wrong;
        }
        HeldOutputs.Output hold = r.held() && !d.isEmpty() ? held.described(p.wanted.id.shuffleId(), p.wanted.id.mapId()) : null;
        if (!pieced.contains(p)) { // a block closed meanwhile has no pieces left to read
            if (hold != null) {
                held.settle(hold);
            }
            return null;
        }
        long now = context.nanoTime();
        p.where = d;
        p.describedAt = now;
        if (hold != null && p.hold == null) { // described before in an answer that was not held
            hold.start();
            p.hold = hold;
        }
        for (Read r0 : p.parked) {
            HeldOutputs.end(r0); // read again under the new description, as a new read
            queued.addFirst(p.pieceRead(r0.piece, r0.queuedAt, r0.buffer));
        }
        p.parked = null;
        return null;
    }
}
