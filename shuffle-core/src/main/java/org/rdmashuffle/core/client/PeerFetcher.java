package org.rdmashuffle.core.client;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeoutException;

import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.client.AwaitedRequests.Request;
import org.rdmashuffle.core.buffer.RegisteredBuffer;
import org.rdmashuffle.core.protocol.MalformedMessageException;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.transport.ReadPlan;

/**
 * Fetches blocks from one peer over one {@link PeerChannel} (a data connection's queue pairs): the
 * data path of a reducer. It knows the channel and its {@link FetchContext} only through their
 * interfaces, so a test drives it without queue pairs or wall-clock time ({@code PeerFetcherTest}).
 *
 * <ol>
 * <li>{@link #fetch} sends one FetchRequest per batch of blocks (as many as a receive buffer's answer
 * holds) and remembers who waits for them.</li>
 * <li>{@link #onMessage} takes the peer's block descriptors (address, length, rkey) and queues a read
 * per block ({@link DescribedReads}, which also reads blocks of outputs whose layout is cached); empty
 * blocks are delivered at once. A block larger than one fetch buffer becomes a {@link PiecedBlock}: a
 * few pieces queued, the rest as its consumer reads them.</li>
 * <li>{@link #pump} turns queued reads into RDMA_READ chains while the bounds allow: chains in flight
 * to this peer, bytes in flight to this peer, and the process-wide {@link FetchBudget}. Reads that
 * sit next to each other in the same remote region become one read request scattering into each
 * one's own registered buffer; a chain is at most {@code chainLength} requests and only its last
 * is signaled.</li>
 * <li>{@link #onChainCompleted} delivers the chain's blocks to their listeners (a pieced block at its
 * first piece), or fails them.</li>
 * </ol>
 *
 * Any failure of the connection (a failed read or send, a malformed message, a timeout) fails every
 * block this fetcher still owes, each listener told which blocks from which peer and why; the engine
 * then starts a new fetcher, with a new connection, for the next request. A read that waits in the
 * queue longer than the fetch timeout (for a buffer, or room in the bounds) fails alone. Listener
 * calls happen with no lock held.
 */
public final class PeerFetcher implements PiecedBlock.Recycler {
    /**
     * The tuning a fetcher runs with. {@code leaseNanos}: how long the peer keeps a described region
     * registered (the shorter of its lease, told at connection, and our fetch timeout): a description
     * is trusted for half of it.
     */
    public record Limits(int chainLength, int maxSge, long maxChainBytes, long maxBytesInFlight, int maxChainsInFlight,
                         int maxBlocksPerRequest, long timeoutNanos, long leaseNanos) {
        public Limits(int chainLength, int maxSge, long maxChainBytes, long maxBytesInFlight, int maxChainsInFlight,
                      int maxBlocksPerRequest, long timeoutNanos) {
            this(chainLength, maxSge, maxChainBytes, maxBytesInFlight, maxChainsInFlight, maxBlocksPerRequest, timeoutNanos,
                    timeoutNanos);
        }
    }


    private final PeerChannel channel;
    private final FetchContext context;
    private final Limits limits;
    private final AwaitedRequests awaiting = new AwaitedRequests();
    private final ReadQueue queued;
    private final ChainsInFlight inFlight = new ChainsInFlight();
    /** Layouts of outputs touched: their other blocks need no request. */
    private final LayoutCache layouts;
    /** Layouts on the way, and the blocks waiting for them instead of asking again. */
    private final LayoutsAsked asked;
    /** One plan and one coalescer, reused for every chain (under the lock; posting copies the plan). */
    private final ReadPlan plan = new ReadPlan();
    private final Coalescer coalescer;
    /** Pieced blocks with pieces still to land, whether handed over or not. */
    private final Set<PiecedBlock> pieced = new LinkedHashSet<>();
    /** Whole blocks' reads and wants, reused once delivered. */
    private final SpareReads spares = new SpareReads();
    /** Descriptors and layouts made into queued reads. */
    private final DescribedReads described;
    /** Since when it has had nothing to do (-1: busy), seen by {@link #checkTimeouts}. */
    private long idleSince = -1;
    /** Closed for being idle: it takes no fetch (the engine opens a new connection for the next). */
    private boolean closedIdle;
    private boolean failed;

    public PeerFetcher(PeerChannel channel, FetchContext context, Limits limits) {
        this.channel = channel;
        this.context = context;
        this.limits = limits;
        this.layouts = new LayoutCache(limits.leaseNanos() / 2);
        this.asked = new LayoutsAsked(limits.leaseNanos() / 2);
        this.coalescer = new Coalescer(limits.maxSge());
        this.queued = new ReadQueue(limits.timeoutNanos(), limits.leaseNanos(), context.nanoTime());
        this.described = new DescribedReads(queued, layouts, asked, pieced, spares, context, this, limits.timeoutNanos());
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

    /** Sends one FetchRequest per batch (blocks of one shuffle, as many as an answer can hold). */
    private void request(List<Wanted> blocks) {
        List<Wanted> refused = null;
        Throwable why = null;
        synchronized (this) {
            if (failed) {
                refused = blocks;
                why = new IllegalStateException("the connection failed just before this fetch");
            } else {
                int i = 0;
                while (i < blocks.size() && why == null) {
                    int shuffle = blocks.get(i).id.shuffleId();
                    List<Wanted> batch = new ArrayList<>();
                    while (i < blocks.size() && batch.size() < limits.maxBlocksPerRequest()
                            && blocks.get(i).id.shuffleId() == shuffle) {
                        batch.add(blocks.get(i++));
                    }
                    why = send(batch, null);
                }
                if (why != null && i < blocks.size()) {
                    refused = blocks.subList(i, blocks.size());
                }
            }
        }
        if (refused != null) {
            Outcomes.failed(peer(), refused, BlockFetchException.Kind.FAILED, "the request could not be sent", why);
        }
        if (why != null) {
            fail(why);
        }
    }

    /** Under the lock: sends one request; returns what went wrong, if anything (the request then awaits the failure). */
    private Throwable send(List<Wanted> batch, PiecedBlock refreshing) {
        long id = context.nextId();
        Message.FetchRequest request = awaiting.add(id, batch, refreshing, layouts, asked, context.nanoTime());
        try {
            channel.send(request);
            return null;
        } catch (RuntimeException e) {
            return e;
        }
    }

    /** A FetchResponse or ErrorResponse from the peer, on a poller thread. */
    public void onMessage(Message message) {
        List<Wanted> empty = new ArrayList<>();
        List<Wanted> refused = null;
        List<Wanted> askAgain = new ArrayList<>();
        PiecedBlock refusedPieces = null;
        String refusal = null;
        BlockFetchException.Kind refusalKind = null;
        Throwable broken = null;
        synchronized (this) {
            if (failed) {
                return;
            }
            switch (message) {
                case Message.FetchResponse r -> {
                    Request req = awaiting.take(r.requestId());
                    if (req == null) {
                        broken = new MalformedMessageException("a response to request " + r.requestId() + ", which is not awaited");
                    } else if (r.blocks().size() != req.blocks().size()) {
                        awaiting.putBack(r.requestId(), req); // failed with the connection below
                        broken = new MalformedMessageException("response " + r.requestId() + " describes " + r.blocks().size()
                                + " blocks for a request of " + req.blocks().size());
                    } else {
                        broken = req.refreshing() != null ? described.redescribed(req.refreshing(), r) : described.fromAnswer(req, r, empty);
                        if (broken != null) {
                            awaiting.putBack(r.requestId(), req); // its blocks fail with the connection below
                        } else {
                            described.wake(req, r, empty, askAgain);
                        }
                    }
                }
                case Message.ErrorResponse e when e.requestId() == Message.CONNECTION_ERROR ->
                        broken = new java.io.IOException("the peer closed the connection: " + e.reason());
                case Message.ErrorResponse e -> {
                    Request req = awaiting.take(e.requestId());
                    Wanted named = req == null || e.block() == null ? null
                            : req.blocks().stream().filter(w -> w.id.equals(e.block())).findFirst().orElse(null);
                    if (req == null) {
                        broken = new MalformedMessageException("an error for request " + e.requestId() + ", which is not awaited");
                    } else if (e.block() != null && named == null) {
                        awaiting.putBack(e.requestId(), req); // its blocks fail with the connection below
                        broken = new MalformedMessageException("an error for request " + e.requestId() + " about " + e.block()
                                + ", which it did not ask for");
                    } else {
                        refusal = e.reason();
                        refusalKind = e.kind() == Message.ErrorKind.NO_SUCH_OUTPUT ? BlockFetchException.Kind.NO_SUCH_OUTPUT
                                : BlockFetchException.Kind.REFUSED;
                        for (Wanted w : named == null ? req.blocks() : List.of(named)) {
                            layouts.forget(w.id.shuffleId(), w.id.mapId()); // gone or refused: ask next time
                        }
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
                    }
                }
                case Message.FetchRequest q -> broken = new MalformedMessageException("a fetch request on a fetching connection");
            }
        }
        for (Wanted w : empty) {
            Outcomes.deliver(w, FetchedBlock.empty(w.id));
        }
        if (refused != null) {
            Outcomes.failed(peer(), refused, refusalKind, "the peer refused: " + refusal, null);
        }
        if (refusedPieces != null) {
            failPieced(refusedPieces, refusalKind, "the peer refused to describe it again: " + refusal, null);
        }
        if (broken != null) {
            fail(broken);
        } else {
            if (!askAgain.isEmpty()) {
                request(askAgain);
            }
            pump();
        }
    }

    /** Posts chains while the bounds allow. Call with no fetcher's lock held. */
    public void pump() {
        redescribeStale(context.nanoTime());
        Throwable postFailed = null;
        List<Read> noBuffer = null;
        RuntimeException allocationFailure = null;
        synchronized (this) {
            while (!failed && !queued.isEmpty() && inFlight.size() < limits.maxChainsInFlight()) {
                int take = 0;
                long bytes = 0;
                int requests = 0;
                Coalescer sizing = coalescer.reset(null);
                for (Read r : queued) {
                    int need = sizing.requestsFor(r);
                    if (take > 0 && (requests + need > limits.chainLength() || bytes + r.length > limits.maxChainBytes())) {
                        break;
                    }
                    sizing.add(r, 0, 0);
                    take++;
                    bytes += r.length;
                    requests += need;
                }
                if (inFlight.bytes() > 0 && inFlight.bytes() + bytes > limits.maxBytesInFlight()) {
                    break; // resumed when one of ours completes
                }
                if (!context.budget().tryAcquire(bytes)) {
                    // Wait first, then look once more: a release between the two would otherwise wake no one.
                    context.budget().await(this);
                    if (!context.budget().tryAcquire(bytes)) {
                        break;
                    }
                }
                List<Read> reads = new ArrayList<>(take);
                Iterator<Read> it = queued.iterator();
                Read unregistered = null;
                for (int k = 0; k < take; k++) {
                    Read r = it.next();
                    if (r.buffer == null) {
                        try {
                            r.buffer = context.buffers().allocate(r.length);
                        } catch (RuntimeException e) { // registering a slab failed: this read fails, the rest go on
                            allocationFailure = e;
                            unregistered = r;
                            break;
                        }
                        if (r.buffer == null) {
                            break;
                        }
                    }
                    reads.add(r);
                }
                // Post the reads that got buffers: with none of ours outstanding, waiting for the rest could
                // wait for a release that never comes.
                long kept = 0;
                for (Read r : reads) {
                    kept += r.length;
                }
                context.budget().release(bytes - kept, reads.isEmpty());
                if (unregistered != null) {
                    queued.remove(unregistered); // failed below, outside the lock
                    (noBuffer == null ? noBuffer = new ArrayList<>() : noBuffer).add(unregistered);
                }
                if (reads.isEmpty()) {
                    if (unregistered != null) {
                        continue;
                    }
                    // Wait for a released buffer (or the timer), then look once more: a release between the
                    // two would otherwise wake no one.
                    context.budget().await(this);
                    Read head = queued.peek();
                    try {
                        head.buffer = context.buffers().allocate(head.length);
                    } catch (RuntimeException e) { // the slab it waited for failed to register: it fails, as above
                        allocationFailure = e;
                        queued.remove(head);
                        (noBuffer == null ? noBuffer = new ArrayList<>() : noBuffer).add(head);
                        continue;
                    }
                    if (head.buffer == null) {
                        break;
                    }
                    continue;
                }
                bytes = kept;
                take = reads.size();
                Coalescer building = coalescer.reset(plan.clear());
                for (Read r : reads) {
                    building.add(r, r.buffer.address(), r.buffer.lkey());
                }
                long id = context.nextId();
                try {
                    channel.postReads(id, plan);
                } catch (RuntimeException e) {
                    context.budget().release(bytes, true);
                    postFailed = e; // the reads stay queued, with their buffers: the failure releases them
                    break;
                }
                long now = context.nanoTime();
                queued.posted(take, now);
                inFlight.add(id, new ChainsInFlight.Chain(reads, bytes, plan.requests(), now));
                context.budget().posted(plan.requests(), take);
            }
        }
        if (noBuffer != null) {
            for (Read r : noBuffer) {
                failRead(r, "no fetch buffer: registering fetch buffer memory failed: " + allocationFailure.getMessage(),
                        allocationFailure);
            }
        }
        if (postFailed != null) {
            fail(postFailed);
        }
    }

    /** A read out of the queue fails alone: its block, or the pieced block it is part of. */
    private void failRead(Read r, String reason, Throwable cause) {
        if (r.pieced != null) {
            failPieced(r.pieced, BlockFetchException.Kind.FAILED, reason, cause);
        } else {
            Outcomes.failed(peer(), List.of(r.wanted), BlockFetchException.Kind.FAILED, reason, cause);
        }
    }

    /** A pieced block fails alone (the connection carries on): its queued pieces go, its consumer is told. */
    private void failPieced(PiecedBlock p, BlockFetchException.Kind kind, String reason, Throwable cause) {
        List<RegisteredBuffer> release = new ArrayList<>();
        boolean handedOver;
        synchronized (this) {
            if (!pieced.remove(p)) {
                return;
            }
            dropPieces(p, release);
            handedOver = p.handedOver;
        }
        release.forEach(RegisteredBuffer::release);
        BlockFetchException failure = new BlockFetchException(peer(), List.of(p.wanted.id), kind, reason, cause);
        if (handedOver) {
            p.fail(failure);
        } else {
            Outcomes.failed(p.wanted, failure);
        }
    }

    /** Under the lock: takes {@code p}'s queued and set-aside pieces out, collecting the buffers they hold. */
    private void dropPieces(PiecedBlock p, List<RegisteredBuffer> release) {
        queued.removePieces(p, release);
        if (p.parked != null) {
            for (Read r : p.parked) {
                if (r.buffer != null) {
                    release.add(r.buffer);
                }
            }
            p.parked = null;
        }
    }

    @Override
    public void recycle(PiecedBlock p, RegisteredBuffer buffer) {
        boolean queuedNext = false;
        synchronized (this) {
            if (!failed && pieced.contains(p) && p.nextToQueue < p.pieces) {
                long now = context.nanoTime();
                Read next = p.pieceRead(p.nextToQueue++, now, buffer);
                if (p.parked != null) {
                    p.parked.add(next);
                } else {
                    queued.addFirst(next); // ahead of other reads: its consumer is waiting for it
                }
                queuedNext = true;
            }
        }
        if (!queuedNext) {
            buffer.release();
        } else {
            pump();
        }
    }

    @Override
    public void closed(PiecedBlock p) {
        List<RegisteredBuffer> release = new ArrayList<>();
        synchronized (this) {
            if (pieced.remove(p)) {
                dropPieces(p, release);
            }
        }
        release.forEach(RegisteredBuffer::release); // pieces in flight are released as they land
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
        context.budget().release(chain.bytes(), true);
        if (error != null) {
            // The reads may have left the queue pair in ERR: the connection goes, with every block it owes.
            fail(error, chain);
            return;
        }
        List<Read> reads = chain.reads();
        for (int i = 0; i < reads.size(); i++) { // indexed: no iterator per chain
            Read r = reads.get(i);
            if (r.pieced == null) {
                Outcomes.deliver(r.wanted, new FetchedBlock(r.wanted.id, r.buffer, r.length, r.rawLength));
            } else {
                landed(r);
            }
        }
        synchronized (this) {
            for (int i = 0; i < reads.size(); i++) {
                Read r = reads.get(i);
                if (r.pieced == null) {
                    spares.delivered(r);
                }
            }
        }
        pump();
        context.budget().wakeWaiters();
    }

    /** A piece landed: kept for its consumer (the block handed over at its first piece), or released if it is gone. */
    private void landed(Read r) {
        PiecedBlock p = r.pieced;
        boolean handOver;
        synchronized (this) {
            if (!pieced.contains(p)) { // failed alone (its listener told) or closed by its consumer
                r.buffer.release();
                return;
            }
            // Handed over before it lands: a failure from now on goes to the stream, never to the listener.
            handOver = !p.handedOver;
            p.handedOver = true;
        }
        if (!p.landed(r.piece, r.buffer)) {
            r.buffer.release(); // the fetch failed meanwhile: the stream says so
        }
        synchronized (this) {
            if (p.allLanded()) {
                pieced.remove(p);
            }
        }
        if (handOver) {
            Outcomes.deliver(p.wanted, new FetchedBlock(p));
        }
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
                    if (r.buffer != null) { // taken on a retry and not posted yet: its new read takes another
                        r.buffer.release();
                        r.buffer = null;
                    }
                    (stale == null ? stale = new ArrayList<>() : stale).add(r.wanted);
                } else {
                    if (r.pieced.parked == null) {
                        r.pieced.parked = new ArrayList<>();
                        (refresh == null ? refresh = new ArrayList<>() : refresh).add(r.pieced);
                    }
                    r.pieced.parked.add(r);
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
        synchronized (this) {
            if (awaiting.anyOlderThan(now, limits.timeoutNanos())) {
                late = "no answer to a metadata request";
            }
            if (inFlight.anyOlderThan(now, limits.timeoutNanos())) {
                late = "a read did not complete";
            }
            if (late == null) {
                expired = queued.takeExpired(now);
            }
            if (!awaiting.isEmpty() || !queued.isEmpty() || inFlight.size() > 0 || !pieced.isEmpty()) {
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
            chains = inFlight.drain();
            for (PiecedBlock p : pieced) {
                dropPieces(p, release);
                if (p.handedOver) {
                    handedOver.add(p);
                } else {
                    notHandedOver.add(p.wanted);
                }
            }
            pieced.clear();
        }
        // Destroy the queue pairs before touching their buffers: until then the device may still write.
        channel.retire();
        for (ChainsInFlight.Chain c : chains) {
            context.budget().release(c.bytes(), true);
        }
        if (alsoFailed != null) {
            chains.add(alsoFailed);
        }
        release.forEach(RegisteredBuffer::release);
        String reason = reasonOf(cause);
        List<Wanted> owed = new ArrayList<>();
        for (ChainsInFlight.Chain c : chains) {
            for (Read r : c.reads()) {
                r.buffer.release();
                r.buffer = null;
                if (r.pieced == null) {
                    owed.add(r.wanted);
                }
            }
        }
        for (Request r : requests) {
            if (r.refreshing() == null) { // a pieced block being described again is among the pieced ones
                owed.addAll(r.blocks());
            }
        }
        for (Read r : reads) {
            if (r.pieced == null) {
                if (r.buffer != null) { // allocated for a chain whose post failed
                    r.buffer.release();
                    r.buffer = null;
                }
                owed.add(r.wanted);
            }
        }
        owed.addAll(notHandedOver);
        owed.addAll(waitingForLayouts);
        Outcomes.failed(peer(), owed, BlockFetchException.Kind.FAILED, reason, cause);
        for (PiecedBlock p : handedOver) {
            p.fail(new BlockFetchException(peer(), List.of(p.wanted.id), BlockFetchException.Kind.FAILED, reason, cause));
        }
        if (!chains.isEmpty()) {
            context.budget().wakeWaiters();
        }
    }

    private static String reasonOf(Throwable cause) {
        String m = cause.getMessage();
        return cause.getClass().getSimpleName() + (m == null ? "" : ": " + m);
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
