package org.rdmashuffle.core.client;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;

import org.rdmashuffle.core.BlockId;
import org.rdmashuffle.core.buffer.RegisteredBuffer;
import org.rdmashuffle.core.protocol.MalformedMessageException;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.server.BlockDescriptor;
import org.rdmashuffle.core.transport.DataConnection;
import org.rdmashuffle.core.transport.ReadPlan;
import org.rdmashuffle.core.transport.WorkRequestIds;

/**
 * Fetches blocks from one peer over one {@link DataConnection}: the data path of a reducer.
 *
 * <ol>
 * <li>{@link #fetch} sends one FetchRequest per batch of blocks (as many as a receive buffer's answer
 * holds) and remembers who waits for them.</li>
 * <li>{@link #onMessage} takes the peer's block descriptors (address, length, rkey) and queues a read
 * per block; empty blocks are delivered at once.</li>
 * <li>{@link #pump} turns queued reads into RDMA_READ chains while the bounds allow: chains in flight
 * to this peer, bytes in flight to this peer, and the process-wide {@link FetchBudget}. Blocks that
 * sit next to each other in the same remote region become one read request scattering into each
 * block's own registered buffer; a chain is at most {@code chainLength} requests and only its last
 * is signaled.</li>
 * <li>{@link #onChainCompleted} delivers the chain's blocks to their listeners, or fails them.</li>
 * </ol>
 *
 * Any failure of the connection (a failed read or send, a malformed message, a timeout) fails every
 * block this fetcher still owes, each listener told which blocks from which peer and why; the engine
 * then starts a new fetcher, with a new connection, for the next request. Listener calls happen with
 * no lock held.
 */
public final class PeerFetcher {
    /** Largest single read request: far below the 2^31 an SGE can say, so pieces stay cheap to retry. */
    static final long MAX_REQUEST_BYTES = 1L << 30;
    private static final System.Logger LOG = System.getLogger(PeerFetcher.class.getName());

    /** The tuning a fetcher runs with. */
    public record Limits(int chainLength, int maxSge, long maxChainBytes, long maxBytesInFlight, int maxChainsInFlight,
                         int maxBlocksPerRequest, long timeoutNanos) {
    }

    private record Wanted(BlockId id, BlockFetchListener listener) {
    }

    private static final class Request {
        final List<Wanted> blocks;
        final long sentAt;

        Request(List<Wanted> blocks, long sentAt) {
            this.blocks = blocks;
            this.sentAt = sentAt;
        }
    }

    private static final class Read {
        final Wanted wanted;
        final BlockDescriptor where;
        /** When the peer described it: the peer keeps the region registered for a lease from then. */
        final long describedAt;
        RegisteredBuffer buffer;

        Read(Wanted wanted, BlockDescriptor where, long describedAt) {
            this.wanted = wanted;
            this.where = where;
            this.describedAt = describedAt;
        }
    }

    private static final class Chain {
        final List<Read> reads;
        final long bytes;
        final int requests;
        final long postedAt;

        Chain(List<Read> reads, long bytes, int requests, long postedAt) {
            this.reads = reads;
            this.bytes = bytes;
            this.requests = requests;
            this.postedAt = postedAt;
        }
    }

    private final DataConnection connection;
    private final FetchTransport transport;
    private final Limits limits;
    private final Map<Long, Request> awaiting = new HashMap<>();
    private final ArrayDeque<Read> queued = new ArrayDeque<>();
    private final Map<Long, Chain> inFlight = new LinkedHashMap<>();
    private long bytesInFlight;
    private boolean failed;

    public PeerFetcher(DataConnection connection, FetchTransport transport, Limits limits) {
        this.connection = connection;
        this.transport = transport;
        this.limits = limits;
    }

    public DataConnection connection() {
        return connection;
    }

    public String peer() {
        return connection.peer();
    }

    public synchronized boolean isFailed() {
        return failed;
    }

    /** Asks the peer for these blocks; each gets exactly one listener call. */
    public void fetch(List<BlockId> blocks, BlockFetchListener listener) {
        request(wanted(blocks, listener));
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
                    int shuffle = blocks.get(i).id().shuffleId();
                    List<Wanted> batch = new ArrayList<>();
                    while (i < blocks.size() && batch.size() < limits.maxBlocksPerRequest()
                            && blocks.get(i).id().shuffleId() == shuffle) {
                        batch.add(blocks.get(i++));
                    }
                    long id = transport.nextId();
                    awaiting.put(id, new Request(batch, System.nanoTime()));
                    try {
                        transport.send(connection, new Message.FetchRequest(id, shuffle, batch.stream().map(Wanted::id).toList()));
                    } catch (RuntimeException e) {
                        why = e;
                    }
                }
                if (why != null && i < blocks.size()) {
                    refused = blocks.subList(i, blocks.size());
                }
            }
        }
        if (refused != null) {
            notifyFailed(refused, BlockFetchException.Kind.FAILED, "the request could not be sent", why);
        }
        if (why != null) {
            fail(why);
        }
    }

    private static List<Wanted> wanted(List<BlockId> blocks, BlockFetchListener listener) {
        return blocks.stream().map(b -> new Wanted(b, listener)).toList();
    }

    /** A FetchResponse or ErrorResponse from the peer, on a poller thread. */
    public void onMessage(Message message) {
        List<Wanted> empty = new ArrayList<>();
        List<Wanted> refused = null;
        List<Wanted> askAgain = List.of();
        String refusal = null;
        BlockFetchException.Kind refusalKind = null;
        Throwable broken = null;
        synchronized (this) {
            if (failed) {
                return;
            }
            switch (message) {
                case Message.FetchResponse r -> {
                    Request req = awaiting.remove(r.requestId());
                    if (req == null) {
                        broken = new MalformedMessageException("a response to request " + r.requestId() + ", which is not awaited");
                    } else if (r.blocks().size() != req.blocks.size()) {
                        awaiting.put(r.requestId(), req); // failed with the connection below
                        broken = new MalformedMessageException("response " + r.requestId() + " describes " + r.blocks().size()
                                + " blocks for a request of " + req.blocks.size());
                    } else {
                        broken = queueReads(req, r);
                    }
                }
                case Message.ErrorResponse e when e.requestId() == Message.CONNECTION_ERROR ->
                        broken = new java.io.IOException("the peer closed the connection: " + e.reason());
                case Message.ErrorResponse e -> {
                    Request req = awaiting.remove(e.requestId());
                    Wanted named = req == null || e.block() == null ? null
                            : req.blocks.stream().filter(w -> w.id().equals(e.block())).findFirst().orElse(null);
                    if (req == null) {
                        broken = new MalformedMessageException("an error for request " + e.requestId() + ", which is not awaited");
                    } else if (e.block() != null && named == null) {
                        broken = new MalformedMessageException("an error for request " + e.requestId() + " about " + e.block()
                                + ", which it did not ask for");
                    } else {
                        // About one block: the peer looked no further, so the others are asked again.
                        refused = named == null ? req.blocks : List.of(named);
                        if (named != null) {
                            askAgain = new ArrayList<>(req.blocks);
                            askAgain.remove(named);
                        }
                        refusal = e.reason();
                        refusalKind = e.kind() == Message.ErrorKind.NO_SUCH_OUTPUT ? BlockFetchException.Kind.NO_SUCH_OUTPUT
                                : BlockFetchException.Kind.REFUSED;
                    }
                }
                case Message.FetchRequest q -> broken = new MalformedMessageException("a fetch request on a fetching connection");
            }
            if (broken == null) {
                for (Iterator<Read> it = queued.iterator(); it.hasNext(); ) {
                    Read read = it.next();
                    if (read.where.isEmpty()) {
                        empty.add(read.wanted);
                        it.remove();
                    }
                }
            }
        }
        for (Wanted w : empty) {
            deliver(w, FetchedBlock.empty(w.id()));
        }
        if (refused != null) {
            notifyFailed(refused, refusalKind, "the peer refused: " + refusal, null);
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

    /** Checks each descriptor against what was asked and queues its read; returns what is wrong, if anything. */
    private Throwable queueReads(Request req, Message.FetchResponse r) {
        List<Read> reads = new ArrayList<>(req.blocks.size());
        long now = System.nanoTime();
        for (int i = 0; i < req.blocks.size(); i++) {
            Wanted w = req.blocks.get(i);
            BlockDescriptor d = r.blocks().get(i);
            if (!d.blockId().equals(w.id())) {
                return new MalformedMessageException("response " + r.requestId() + " describes " + d.blockId() + " where "
                        + w.id() + " was asked");
            }
            if (!d.isEmpty() && (d.address() == 0 || d.address() + d.length() < d.address())) {
                return new MalformedMessageException("response " + r.requestId() + ": impossible range for " + w.id() + ": "
                        + d.length() + " bytes at 0x" + Long.toHexString(d.address()));
            }
            reads.add(new Read(w, d, now));
        }
        queued.addAll(reads);
        return null;
    }

    /** Posts chains while the bounds allow. Call with no fetcher's lock held. */
    public void pump() {
        redescribeStale(System.nanoTime());
        List<Wanted> tooLarge = new ArrayList<>();
        Throwable postFailed = null;
        synchronized (this) {
            while (!failed && !queued.isEmpty() && inFlight.size() < limits.maxChainsInFlight()) {
                Read head = queued.peek();
                if (head.where.length() > transport.buffers().limitBytes()
                        || head.where.length() > MAX_REQUEST_BYTES * limits.chainLength()) {
                    queued.poll();
                    tooLarge.add(head.wanted);
                    continue;
                }
                int take = 0;
                long bytes = 0;
                int requests = 0;
                Coalescer sizing = new Coalescer(limits.maxSge(), null);
                for (Read r : queued) {
                    int need = sizing.requestsFor(r.where);
                    if (take > 0 && (requests + need > limits.chainLength() || bytes + r.where.length() > limits.maxChainBytes()
                            || r.where.length() > transport.buffers().limitBytes())) {
                        break;
                    }
                    sizing.add(r.where, 0, 0);
                    take++;
                    bytes += r.where.length();
                    requests += need;
                }
                if (bytesInFlight > 0 && bytesInFlight + bytes > limits.maxBytesInFlight()) {
                    break; // resumed when one of ours completes
                }
                if (!transport.budget().tryAcquire(bytes)) {
                    transport.budget().await(this);
                    break;
                }
                List<Read> reads = new ArrayList<>(take);
                Iterator<Read> it = queued.iterator();
                boolean allocated = true;
                for (int k = 0; k < take; k++) {
                    Read r = it.next();
                    r.buffer = transport.buffers().allocate(r.where.length());
                    reads.add(r);
                    if (r.buffer == null) {
                        allocated = false;
                        break;
                    }
                }
                if (!allocated) {
                    reads.remove(reads.size() - 1); // the one that got no buffer
                    if (reads.isEmpty()) {
                        transport.budget().release(bytes);
                        transport.budget().await(this); // a released buffer wakes us
                        break;
                    }
                    // Post the reads that got buffers: with none of ours outstanding, waiting for the rest
                    // could wait for a release that never comes.
                    long kept = 0;
                    for (Read r : reads) {
                        kept += r.where.length();
                    }
                    transport.budget().release(bytes - kept);
                    bytes = kept;
                    take = reads.size();
                }
                ReadPlan plan = new ReadPlan();
                Coalescer building = new Coalescer(limits.maxSge(), plan);
                for (Read r : reads) {
                    building.add(r.where, r.buffer.address(), r.buffer.lkey());
                }
                long id = transport.nextId();
                try {
                    connection.postReads(WorkRequestIds.of(WorkRequestIds.READ, id), plan);
                } catch (RuntimeException e) {
                    releaseBuffers(reads);
                    transport.budget().release(bytes);
                    postFailed = e;
                    break;
                }
                for (int k = 0; k < take; k++) {
                    queued.poll();
                }
                inFlight.put(id, new Chain(reads, bytes, plan.requests(), System.nanoTime()));
                transport.budget().posted(plan.requests(), take);
                bytesInFlight += bytes;
            }
        }
        if (!tooLarge.isEmpty()) {
            notifyFailed(tooLarge, BlockFetchException.Kind.TOO_LARGE, "the block is larger than the fetch buffer memory ("
                    + transport.buffers().limitBytes() + " bytes, " + org.rdmashuffle.core.config.EngineConfig.KEY_FETCH_BUFFER_MEMORY
                    + ") can hold", null);
        }
        if (postFailed != null) {
            fail(postFailed);
        }
    }

    private static void releaseBuffers(List<Read> reads) {
        for (Read r : reads) {
            if (r.buffer != null) {
                r.buffer.release();
                r.buffer = null;
            }
        }
    }

    /** The signaled (or failed) completion of chain {@code id}; unknown ids (of a retired connection) are ignored. */
    public void onChainCompleted(long id, Throwable error) {
        Chain chain;
        synchronized (this) {
            chain = inFlight.remove(id);
            if (chain == null) {
                return;
            }
            bytesInFlight -= chain.bytes;
        }
        transport.budget().release(chain.bytes);
        if (error != null) {
            // The reads may have left the queue pair in ERR: the connection goes, with every block it owes.
            fail(error, chain);
            return;
        }
        for (Read r : chain.reads) {
            deliver(r.wanted, new FetchedBlock(r.wanted.id(), r.buffer.segment().asSlice(0, r.where.length()), r.buffer,
                    r.where.rawLength()));
        }
        pump();
        transport.budget().wakeWaiters();
    }

    /**
     * Asks again for the blocks whose reads waited in the queue (for room in the bounds) longer than
     * half the fetch timeout. The peer keeps a described region registered for a lease of one fetch
     * timeout and may release it after; a read posted later could find the region gone, fail, and take
     * the connection and every block on it down. Described again, the region's lease starts anew.
     */
    private void redescribeStale(long now) {
        List<Wanted> stale = null;
        synchronized (this) {
            if (failed || queued.isEmpty()) {
                return;
            }
            for (Iterator<Read> it = queued.iterator(); it.hasNext(); ) {
                Read r = it.next();
                if (now - r.describedAt > limits.timeoutNanos() / 2) {
                    it.remove();
                    (stale == null ? stale = new ArrayList<>() : stale).add(r.wanted);
                }
            }
        }
        if (stale != null) {
            request(stale);
        }
    }

    /**
     * Fails the connection if a request or a chain has waited longer than the fetch timeout; asks again
     * for blocks queued so long their description may be out of date.
     */
    public void checkTimeouts(long now) {
        redescribeStale(now);
        String late = null;
        synchronized (this) {
            for (Request r : awaiting.values()) {
                if (now - r.sentAt > limits.timeoutNanos()) {
                    late = "no answer to a metadata request";
                }
            }
            for (Chain c : inFlight.values()) {
                if (now - c.postedAt > limits.timeoutNanos()) {
                    late = "a read did not complete";
                }
            }
        }
        if (late != null) {
            fail(new TimeoutException(late + " within " + limits.timeoutNanos() / 1_000_000 + " ms"));
        }
    }

    public void fail(Throwable cause) {
        fail(cause, null);
    }

    private void fail(Throwable cause, Chain alsoFailed) {
        List<Request> requests;
        List<Read> reads;
        List<Chain> chains;
        long held;
        synchronized (this) {
            if (failed && alsoFailed == null) {
                return;
            }
            failed = true;
            requests = new ArrayList<>(awaiting.values());
            reads = new ArrayList<>(queued);
            chains = new ArrayList<>(inFlight.values());
            held = bytesInFlight;
            awaiting.clear();
            queued.clear();
            inFlight.clear();
            bytesInFlight = 0;
        }
        // Destroy the queue pairs before touching their buffers: until then the device may still write.
        transport.retire(connection);
        for (Chain c : chains) {
            transport.budget().release(c.bytes);
        }
        if (alsoFailed != null) {
            chains.add(alsoFailed);
        }
        String reason = reasonOf(cause);
        for (Chain c : chains) {
            releaseBuffers(c.reads);
            notifyFailed(c.reads.stream().map(r -> r.wanted).toList(), BlockFetchException.Kind.FAILED, reason, cause);
        }
        for (Request r : requests) {
            notifyFailed(r.blocks, BlockFetchException.Kind.FAILED, reason, cause);
        }
        if (!reads.isEmpty()) {
            notifyFailed(reads.stream().map(r -> r.wanted).toList(), BlockFetchException.Kind.FAILED, reason, cause);
        }
        if (held > 0 || !chains.isEmpty()) {
            transport.budget().wakeWaiters();
        }
    }

    private static String reasonOf(Throwable cause) {
        String m = cause.getMessage();
        return cause.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }

    /** Tells each listener which of its blocks failed, in one exception per listener. */
    private void notifyFailed(List<Wanted> blocks, BlockFetchException.Kind kind, String reason, Throwable cause) {
        Map<BlockFetchListener, List<BlockId>> byListener = new LinkedHashMap<>();
        for (Wanted w : blocks) {
            byListener.computeIfAbsent(w.listener(), k -> new ArrayList<>()).add(w.id());
        }
        for (Map.Entry<BlockFetchListener, List<BlockId>> e : byListener.entrySet()) {
            BlockFetchException failure = new BlockFetchException(peer(), e.getValue(), kind, reason, cause);
            for (BlockId id : e.getValue()) {
                try {
                    e.getKey().onBlockFetchFailure(id, failure);
                } catch (RuntimeException ex) {
                    LOG.log(System.Logger.Level.WARNING, "block fetch listener failed on the failure of " + id, ex);
                }
            }
        }
    }

    private static void deliver(Wanted w, FetchedBlock block) {
        try {
            w.listener().onBlockFetched(block);
        } catch (RuntimeException e) {
            block.release(); // it never took the block
            LOG.log(System.Logger.Level.WARNING, "block fetch listener failed on " + w.id() + "; block released", e);
        }
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
        int n = 0;
        for (Chain c : inFlight.values()) {
            n += c.requests;
        }
        return n;
    }

    /**
     * Turns blocks into read requests: a block that continues the previous one in the same remote region
     * joins its request as one more scatter entry, while the request has SGEs left and stays under
     * {@link #MAX_REQUEST_BYTES}; a block over that is read in pieces into its own buffer.
     */
    static final class Coalescer {
        private final int maxSge;
        private final ReadPlan plan;
        private boolean open;
        private int rkey;
        private long end;
        private int sges;
        private long requestBytes;

        Coalescer(int maxSge, ReadPlan plan) {
            this.maxSge = maxSge;
            this.plan = plan;
        }

        /** Requests {@code d} would add after the blocks added so far. */
        int requestsFor(BlockDescriptor d) {
            if (joins(d)) {
                return 0;
            }
            return (int) ((d.length() + MAX_REQUEST_BYTES - 1) / MAX_REQUEST_BYTES);
        }

        private boolean joins(BlockDescriptor d) {
            return open && d.rkey() == rkey && d.address() == end && sges < maxSge && requestBytes + d.length() <= MAX_REQUEST_BYTES;
        }

        void add(BlockDescriptor d, long localAddress, int lkey) {
            if (joins(d)) {
                if (plan != null) {
                    plan.sge(localAddress, (int) d.length(), lkey);
                }
                sges++;
                requestBytes += d.length();
            } else if (d.length() <= MAX_REQUEST_BYTES) {
                if (plan != null) {
                    plan.read(d.rkey(), d.address()).sge(localAddress, (int) d.length(), lkey);
                }
                open = true;
                sges = 1;
                requestBytes = d.length();
            } else {
                for (long off = 0; off < d.length(); off += MAX_REQUEST_BYTES) {
                    int piece = (int) Math.min(MAX_REQUEST_BYTES, d.length() - off);
                    if (plan != null) {
                        plan.read(d.rkey(), d.address() + off).sge(localAddress + off, piece, lkey);
                    }
                }
                open = false;
            }
            rkey = d.rkey();
            end = d.address() + d.length();
        }
    }
}
