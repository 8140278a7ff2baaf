package org.rdmashuffle.core.client;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeoutException;

import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.client.AwaitedRequests.Request;
import org.rdmashuffle.core.buffer.RegisteredBuffer;
import org.rdmashuffle.core.protocol.Message;

/**
 * Fetches blocks from one peer over one {@link PeerChannel} (a data connection's queue pairs): the
 * data path of a reducer. It holds the peer's state and its lock; its parts do one thing each:
 *
 * <ol>
 * <li>{@link #fetch} sends one FetchRequest per batch of blocks (as many as a receive buffer's answer
 * holds) and remembers who waits for them ({@link AwaitedRequests}); beyond a bound on requests in
 * flight, blocks wait for an answer to free a place ({@link UnsentBlocks}).</li>
 * <li>{@link #onMessage} reads the peer's answer ({@link AnswerReader}): descriptors become queued
 * reads ({@link DescribedReads}, which also reads blocks of outputs whose layout is cached), empty
 * blocks are delivered at once, a block larger than one fetch buffer is read in pieces
 * ({@link PiecedBlocks}).</li>
 * <li>{@link #pump} posts queued reads as RDMA_READ chains while the bounds allow ({@link ChainPoster}).</li>
 * <li>{@link #onChainCompleted} delivers the chain's blocks to their listeners, or fails them.</li>
 * <li>Outputs a peer described in held answers (protocol version 5) are released once no read of them
 * is left ({@link HeldOutputs}), so the peer can deregister them before their lease ends.</li>
 * </ol>
 *
 * Any failure of the connection (a failed read or send, a malformed message, a timeout) retires it,
 * then fails every block this fetcher still owes ({@link FailedFetch}); the engine starts a new
 * fetcher, with a new connection, for the next request. A read that waits in the queue longer than
 * the fetch timeout (for a buffer, or room in the bounds) fails alone. Listener calls happen with no
 * lock held. It knows its channel and {@link FetchContext} only through their interfaces, so a test
 * drives it without queue pairs or wall-clock time ({@code PeerFetcherTest}).
 */
public final class PeerFetcher {
    /**
     * The tuning a fetcher runs with. {@code leaseNanos}: how long the peer keeps a described region
     * registered (the shorter of its lease, told at connection, and our fetch timeout): a description
     * is trusted for half of it.
     */
    public record Limits(int chainLength, int maxSge, long maxChainBytes, long maxBytesInFlight, int maxChainsInFlight,
                         int maxBlocksPerRequest, long timeoutNanos, long leaseNanos, boolean pageAlignedReads) {
        public Limits(int chainLength, int maxSge, long maxChainBytes, long maxBytesInFlight, int maxChainsInFlight,
                      int maxBlocksPerRequest, long timeoutNanos) {
            this(chainLength, maxSge, maxChainBytes, maxBytesInFlight, maxChainsInFlight, maxBlocksPerRequest, timeoutNanos,
                    timeoutNanos, false);
        }

        /** As it is, each read from a page boundary of the peer's region and of its buffer ({@link Read#lead}). */
        public Limits withPageAlignedReads() {
            return new Limits(chainLength, maxSge, maxChainBytes, maxBytesInFlight, maxChainsInFlight, maxBlocksPerRequest,
                    timeoutNanos, leaseNanos, true);
        }
    }


    private final PeerChannel channel;
    private final FetchContext context;
    private final Limits limits;
    private final AwaitedRequests awaiting = new AwaitedRequests();
    /** Blocks asked for that wait for room among the requests in flight. */
    private final UnsentBlocks unsent = new UnsentBlocks();
    private final ReadQueue queued;
    private final ChainsInFlight inFlight = new ChainsInFlight();
    /** Layouts of outputs touched: their other blocks need no request. */
    private final LayoutCache layouts;
    /** Layouts on the way, and the blocks waiting for them instead of asking again. */
    private final LayoutsAsked asked;
    /** Queued reads into posted chains, within the bounds. */
    private final ChainPoster poster;
    /** Blocks read in pieces, with pieces still to land. */
    private final PiecedBlocks pieces;
    /** Whole blocks' reads and wants, reused once delivered. */
    private final SpareReads spares = new SpareReads();
    /** Descriptors and layouts made into queued reads. */
    private final DescribedReads described;
    /** The peer's answers read against what is awaited. */
    private final AnswerReader answers;
    /** Outputs of held answers with reads under way, and the releases owed for them. */
    private final HeldOutputs held = new HeldOutputs();
    /** Since when it has had nothing to do (-1: busy), seen by {@link #checkTimeouts}. */
    private long idleSince = -1;
    /** Closed for being idle: it takes no fetch (the engine opens a new connection for the next). */
    private boolean closedIdle;
    private boolean failed;

    public PeerFetcher(PeerChannel channel, FetchContext context, Limits limits) {
        this.channel = channel;
        this.context = context;
        this.limits = limits;
        this.layouts = new LayoutCache(limits.leaseNanos() / 2, context.layoutBudget());
        this.asked = new LayoutsAsked(limits.leaseNanos() / 2);
        this.poster = new ChainPoster(channel, context, limits);
        this.queued = new ReadQueue(limits.timeoutNanos(), limits.leaseNanos(), context.nanoTime());
        this.pieces = new PiecedBlocks(this, queued, context, channel.peer());
        this.described = new DescribedReads(queued, layouts, asked, pieces.set(), spares, context, pieces, limits.timeoutNanos(),
                limits.pageAlignedReads(), held);
        this.answers = new AnswerReader(awaiting, described, layouts, pieces.set());
    }

    public PeerChannel channel() {
        return channel;
    }

    public String peer() {
        return channel.peer();
    }

    /** Whether it failed, or is being closed for idleness: either way it takes no fetch. */
    public synchronized boolean isFailed() {
        return failed || closedIdle;
    }

    /**
     * Fetches these blocks; each gets exactly one listener call. A block of an output whose layout
     * this peer sent less than half a lease ago is read at once; the others are asked for.
     */
    public boolean fetch(List<BlockId> blocks, BlockFetchListener listener) {
        List<Wanted> ask = null;
        List<Wanted> empty = new ArrayList<>(0);
        boolean read = false;
        synchronized (this) {
            if (closedIdle) {
                return false;
            }
            idleSince = -1;
            long now = context.nanoTime();
            for (BlockId b : blocks) {
                Wanted w = spares.wanted(b, listener);
                if (!failed && described.fromLayout(w, now, empty)) {
                    read = true;
                } else if (failed || layouts.has(b.shuffleId(), b.mapId()) || !asked.await(w, now)) {
                    (ask == null ? ask = new ArrayList<>(blocks.size()) : ask).add(w);
                } // else its layout is on the way: read from it when it comes
            }
        }
        for (Wanted w : empty) {
            Outcomes.deliver(w, FetchedBlock.empty(w.id));
        }
        if (ask != null) {
            request(ask);
        }
        if (read) {
            pump();
        }
        context.workMade(); // after its requests and reads are registered: a tick from now on sees them
        return true;
    }

    /** Forgets the layouts of a shuffle's outputs: it was unregistered. Blocks waiting for one are asked for. */
    public void forgetLayouts(int shuffleId) {
        List<Wanted> woken;
        synchronized (this) {
            layouts.forget(shuffleId);
            woken = asked.forget(shuffleId);
        }
        if (!woken.isEmpty()) {
            request(woken);
        }
    }

    /** Forgets the layout of one output: it is lost (its map will run again, elsewhere or under another id). */
    public synchronized void forgetLayout(int shuffleId, long mapId) {
        layouts.forget(shuffleId, mapId);
    }

    /**
     * Asks for these blocks: one FetchRequest per batch (blocks of one shuffle, as many as an answer
     * holds) while fewer than {@link UnsentBlocks#MAX_REQUESTS_IN_FLIGHT} await answers; the rest wait
     * for an answer to free a place and go out with other calls' blocks ({@link UnsentBlocks}).
     */
    private void request(List<Wanted> blocks) {
        List<Wanted> refused = null;
        Throwable why = null;
        synchronized (this) {
            if (failed) {
                if (!blocks.isEmpty()) {
                    refused = blocks;
                    why = new IllegalStateException("the connection failed just before this fetch");
                }
            } else {
                unsent.addAll(blocks);
                while (why == null && !unsent.isEmpty() && UnsentBlocks.room(awaiting.size())) {
                    why = send(unsent.nextBatch(limits.maxBlocksPerRequest()), null);
                }
            }
        }
        if (refused != null) {
            Outcomes.failed(peer(), refused, BlockFetchException.Kind.FAILED, "the request could not be sent", why);
        }
        if (why != null) {
            fail(why); // the request that could not be sent and the blocks still unsent fail with the connection
        }
    }

    /** Under the lock: sends one request; returns what went wrong, if anything (the request then awaits the failure). */
    private Throwable send(List<Wanted> batch, PiecedBlock refreshing) {
        long id = context.nextId();
        Message.FetchRequest request = awaiting.add(id, batch, refreshing, layouts, asked, context.nanoTime());
        try {
            channel.send(request);
            context.requestSent();
            return null;
        } catch (RuntimeException e) {
            return e;
        }
    }

    /** A FetchResponse or ErrorResponse from the peer, on a poller thread ({@link AnswerReader}). */
    public void onMessage(Message message) {
        AnswerReader.Answer a;
        synchronized (this) {
            if (failed) {
                return;
            }
            a = answers.read(message);
        }
        for (Wanted w : a.empty()) {
            Outcomes.deliver(w, FetchedBlock.empty(w.id));
        }
        for (AnswerReader.Unread u : a.unread()) {
            Outcomes.failed(peer(), List.of(u.wanted()), BlockFetchException.Kind.FAILED, u.reason(), null);
        }
        if (a.refused() != null) {
            Outcomes.failed(peer(), a.refused(), a.refusalKind(), "the peer refused: " + a.refusal(), null);
        }
        if (a.refusedPieces() != null) {
            pieces.failAlone(a.refusedPieces(), a.refusalKind(), "the peer refused to describe it again: " + a.refusal(), null);
        }
        if (a.broken() != null) {
            fail(a.broken());
        } else {
            request(a.askAgain()); // and an answered request's place goes to blocks waiting for one
            pump();
        }
    }

    /** Posts chains while the bounds allow ({@link ChainPoster}). Call with no fetcher's lock held. */
    public void pump() {
        redescribeStale(context.nanoTime());
        ChainPoster.Posted posted;
        Throwable releaseFailed;
        synchronized (this) {
            if (failed) {
                return;
            }
            releaseFailed = sendReleases(false);
            posted = poster.post(queued, inFlight, this);
        }
        if (releaseFailed != null) {
            fail(releaseFailed);
            return;
        }
        for (Read r : posted.noBuffer()) {
            failRead(r, "no fetch buffer: registering fetch buffer memory failed: " + posted.allocationFailure().getMessage(),
                    posted.allocationFailure());
        }
        if (posted.postFailed() != null) {
            fail(posted.postFailed());
        }
    }

    /**
     * Under the lock: sends the releases owed ({@link HeldOutputs}) once a message's worth is owed, or
     * no chain is in flight (none will come sooner), or {@code all}; what went wrong, if anything.
     */
    private Throwable sendReleases(boolean all) {
        int owed = held.owed();
        if (owed == 0 || (!all && owed < HeldOutputs.MAX_PER_MESSAGE && inFlight.size() > 0)) {
            return null;
        }
        for (Message.Release m : held.take()) {
            try {
                channel.send(m);
            } catch (RuntimeException e) {
                return e;
            }
        }
        return null;
    }

    /** Outputs of held answers whose reads are under way, and releases owed but not sent (tests). */
    synchronized int[] heldOutputs() {
        return new int[] {held.held(), held.owed()};
    }

    /** A read out of the queue fails alone: its block, or the pieced block it is part of. */
    private void failRead(Read r, String reason, Throwable cause) {
        synchronized (this) {
            HeldOutputs.end(r);
        }
        if (r.pieced != null) {
            pieces.failAlone(r.pieced, BlockFetchException.Kind.FAILED, reason, cause);
        } else {
            Outcomes.failed(peer(), List.of(r.wanted), BlockFetchException.Kind.FAILED, reason, cause);
        }
    }

    /** The signaled (or failed) completion of chain {@code id}; unknown ids (of a retired connection) are ignored. */
    public void onChainCompleted(long id, Throwable error) {
        ChainsInFlight.Chain chain;
        synchronized (this) {
            chain = inFlight.remove(id);
            if (chain == null) {
                return;
            }
        }
        context.budget().completed(chain.bytes());
        if (error != null) {
            // The reads may have left the queue pair in ERR: the connection goes, with every block it owes.
            fail(error, chain);
            return;
        }
        List<Read> reads = chain.reads();
        int handedOver = 0;
        try {
            while (handedOver < reads.size()) { // indexed: no iterator per chain
                Read r = reads.get(handedOver);
                if (r.pieced == null) {
                    FetchedBlock block = new FetchedBlock(r.wanted.id, r.buffer, r.lead, r.length, r.rawLength);
                    handedOver++; // its buffer is its consumer's from here
                    Outcomes.deliver(r.wanted, block);
                } else {
                    handedOver++; // its buffer goes with its pieced block from here
                    pieces.landed(r);
                }
            }
        } catch (RuntimeException | Error e) {
            // A bug (or an Error from a listener): the reads not handed over fail with the connection and
            // give their buffers back; those handed over are their consumers'. The router, which this
            // throws to, logs it and fails the connection's owner (already failed here: a no-op).
            fail(e, new ChainsInFlight.Chain(new ArrayList<>(reads.subList(handedOver, reads.size())), 0, 0, chain.postedAt()));
            throw e;
        }
        synchronized (this) {
            for (int i = 0; i < reads.size(); i++) {
                Read r = reads.get(i);
                HeldOutputs.end(r); // its bytes are here: the peer's region is not read by it again
                if (r.pieced == null) {
                    spares.delivered(r);
                }
            }
        }
        pump();
        context.budget().wakeWaiters();
    }

    /**
     * Asks again for the blocks whose reads waited in the queue (for room in the bounds) longer than
     * half the lease. The peer keeps a described region registered for its lease (told when the
     * connection was set up) and may release it after; a read posted later could find the region gone, fail, and take
     * the connection and every block on it down. Described again, the region's lease starts anew. A
     * pieced block's waiting pieces are set aside (with their buffers) until it is described again.
     */
    private void redescribeStale(long now) {
        List<Wanted> stale = null;
        List<PiecedBlock> refresh = null;
        Throwable why = null;
        synchronized (this) {
            List<Read> taken = failed ? null : queued.takeStale(now);
            if (taken == null) {
                return;
            }
            for (Read r : taken) {
                if (r.pieced == null) {
                    HeldOutputs.end(r); // asked for again: a new description comes
                    if (r.buffer != null) { // taken on a retry and not posted yet: its new read takes another
                        r.buffer.release();
                        r.buffer = null;
                    }
                    (stale == null ? stale = new ArrayList<>() : stale).add(r.wanted);
                } else if (pieces.park(r)) {
                    (refresh == null ? refresh = new ArrayList<>() : refresh).add(r.pieced);
                }
            }
            if (refresh != null) {
                for (PiecedBlock p : refresh) {
                    why = why != null ? why : send(List.of(p.wanted), p);
                }
            }
        }
        if (why != null) {
            fail(why);
        }
        if (stale != null) {
            request(stale);
        }
    }

    /**
     * Fails the connection if a request or a chain has waited longer than the fetch timeout; fails the
     * reads that waited that long in the queue while this fetcher posted nothing (buffers held and not
     * given back: reads that wait behind others being read are making progress); asks again for blocks
     * queued so long their description may be out of date.
     */
    public void checkTimeouts(long now) {
        redescribeStale(now);
        String late = null;
        List<Read> expired = null;
        Throwable releaseFailed = null;
        synchronized (this) {
            if (awaiting.anyOlderThan(now, limits.timeoutNanos())) {
                late = "no answer to a metadata request";
            }
            if (inFlight.anyOlderThan(now, limits.timeoutNanos())) {
                late = "a read did not complete";
            }
            if (late == null) {
                expired = queued.takeExpired(now);
                releaseFailed = sendReleases(true); // what is owed goes now, however little: no completion may come to send it
            }
            if (!awaiting.isEmpty() || !unsent.isEmpty() || !queued.isEmpty() || inFlight.size() > 0 || !pieces.isEmpty()) {
                idleSince = -1;
            } else if (idleSince < 0) {
                idleSince = now;
            } else if (now - idleSince > SpareReads.IDLE_NANOS) {
                spares.clear();
            }
        }
        if (late != null) {
            fail(new TimeoutException(late + " within " + limits.timeoutNanos() / 1_000_000 + " ms"));
            return;
        }
        if (releaseFailed != null) {
            fail(releaseFailed);
            return;
        }
        if (expired != null) {
            String why = "waited " + limits.timeoutNanos() / 1_000_000 + " ms for a fetch buffer or room among the reads in "
                    + "flight (fetchBufferMemory, maxBytesInFlight): the blocks fetched before it are not being released";
            for (Read r : expired) {
                if (r.buffer != null) { // a stream's piece, with the buffer its consumer gave back
                    r.buffer.release();
                    r.buffer = null;
                }
                failRead(r, why, null);
            }
            context.budget().wakeWaiters();
        }
    }

    /**
     * Closes this fetcher if it has had nothing to do for {@code idleNanos}: its connection is retired,
     * the peer drops its side with our control connection, and a later fetch opens a new one. A fetch
     * that comes meanwhile is refused ({@link #fetch} returns false) and goes to the new one, so being
     * closed for idleness never fails a block.
     */
    public void closeIfIdle(long now, long idleNanos) {
        synchronized (this) {
            if (failed || idleSince < 0 || now - idleSince <= idleNanos) {
                return;
            }
            closedIdle = true;
        }
        fail(new java.io.IOException("closed after " + idleNanos / 1_000_000_000 + " s idle"));
    }

    /**
     * After {@link #checkTimeouts} and {@link #closeIfIdle} at {@code now}: when the engine's timer must
     * look at it next (nanoTime). The next tick while it has work; while idle, when it is to be closed
     * for idleness or drop its spares; {@link Long#MAX_VALUE} once it failed or was closed.
     */
    public synchronized long nextCheck(long now, long idleNanos) {
        if (failed || closedIdle) {
            return Long.MAX_VALUE;
        }
        if (idleSince < 0) {
            return now;
        }
        long next = after(idleSince, idleNanos);
        return spares.isEmpty() ? next : Math.min(next, after(idleSince, SpareReads.IDLE_NANOS));
    }

    /** The first nanoTime past {@code nanos} after {@code since}, short of Long.MAX_VALUE however long. */
    private static long after(long since, long nanos) {
        long t = since + nanos + 1;
        return t < since ? Long.MAX_VALUE - 1 : Math.min(t, Long.MAX_VALUE - 1);
    }

    public void fail(Throwable cause) {
        fail(cause, null);
    }

    private void fail(Throwable cause, ChainsInFlight.Chain alsoFailed) {
        List<Request> requests;
        List<Read> reads;
        List<Wanted> waitingForLayouts;
        List<ChainsInFlight.Chain> chains;
        List<PiecedBlock> handedOver = new ArrayList<>();
        List<Wanted> notHandedOver = new ArrayList<>();
        List<RegisteredBuffer> release = new ArrayList<>();
        synchronized (this) {
            if (failed && alsoFailed == null) {
                return;
            }
            failed = true;
            requests = awaiting.drain();
            reads = queued.drain();
            waitingForLayouts = asked.drain();
            waitingForLayouts.addAll(unsent.drain());
            chains = inFlight.drain();
            pieces.drain(handedOver, notHandedOver, release);
            layouts.close(); // its bytes go back to the engine's budget: a new connection starts empty
            held.clear(); // the peer gives back what the connection held
        }
        // Destroy the queue pairs before touching their buffers: until then the device may still write.
        channel.retire();
        for (ChainsInFlight.Chain c : chains) {
            context.budget().completed(c.bytes());
        }
        if (alsoFailed != null) {
            chains.add(alsoFailed);
        }
        release.forEach(RegisteredBuffer::release);
        FailedFetch.report(peer(), cause, chains, requests, reads, notHandedOver, waitingForLayouts, handedOver);
        if (!chains.isEmpty()) {
            context.budget().wakeWaiters();
        }
    }

    /** Blocks waiting for room among the requests in flight. */
    public synchronized int unsentBlocks() {
        return unsent.size();
    }

    /** Metadata requests awaiting an answer. */
    public synchronized int awaitingRequests() {
        return awaiting.size();
    }

    /** Reads waiting for room in the bounds. */
    public synchronized int queuedReads() {
        return queued.size();
    }

    public synchronized int chainsInFlight() {
        return inFlight.size();
    }

    /** Read work requests posted and not yet completed. */
    public synchronized int readRequestsInFlight() {
        return inFlight.readRequests();
    }
}
