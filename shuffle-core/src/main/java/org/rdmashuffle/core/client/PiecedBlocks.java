package org.rdmashuffle.core.client;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import org.rdmashuffle.core.buffer.RegisteredBuffer;

/**
 * A {@link PeerFetcher}'s blocks too large for one fetch buffer, read in pieces ({@link PiecedBlock}):
 * those with pieces still to land, whether handed to their consumer yet or not. A block is handed over
 * at its first piece; each buffer its consumer is done with reads the next piece ({@link #recycle});
 * one fails alone when its own reads do, and all of them when the fetcher fails. The set is guarded by
 * the fetcher's lock (the fetcher is the monitor every method here takes).
 */
final class PiecedBlocks implements PiecedBlock.Recycler {
    private final PeerFetcher fetcher;
    private final ReadQueue queued;
    private final FetchContext context;
    private final String peer;
    private final Set<PiecedBlock> pieced = new LinkedHashSet<>();

    PiecedBlocks(PeerFetcher fetcher, ReadQueue queued, FetchContext context, String peer) {
        this.fetcher = fetcher;
        this.queued = queued;
        this.context = context;
        this.peer = peer;
    }

    /** The set itself, for the parts that add and look up blocks under the fetcher's lock. */
    Set<PiecedBlock> set() {
        return pieced;
    }

    /** A pieced block fails alone (the connection carries on): its queued pieces go, its consumer is told. */
    void failAlone(PiecedBlock p, BlockFetchException.Kind kind, String reason, Throwable cause) {
        List<RegisteredBuffer> release = new ArrayList<>();
        boolean handedOver;
        synchronized (fetcher) {
            if (!pieced.remove(p)) {
                return;
            }
            drop(p, release);
            HeldOutputs.end(p);
            handedOver = p.handedOver;
        }
        release.forEach(RegisteredBuffer::release);
        BlockFetchException failure = new BlockFetchException(peer, List.of(p.wanted.id), kind, reason, cause);
        if (handedOver) {
            p.fail(failure);
        } else {
            Outcomes.failed(p.wanted, failure);
        }
    }

    /** Under the lock: takes {@code p}'s queued and set-aside pieces out, collecting the buffers they hold. */
    private void drop(PiecedBlock p, List<RegisteredBuffer> release) {
        queued.removePieces(p, release);
        if (p.parked != null) {
            for (Read r : p.parked) {
                HeldOutputs.end(r);
                if (r.buffer != null) {
                    release.add(r.buffer);
                }
            }
            p.parked = null;
        }
    }

    /** Its consumer is done with a piece: the buffer reads the next one, ahead of other reads, or goes back. */
    @Override
    public void recycle(PiecedBlock p, RegisteredBuffer buffer) {
        boolean queuedNext = false;
        synchronized (fetcher) {
            if (pieced.contains(p) && p.nextToQueue < p.pieces) { // none is left once the fetcher failed
                Read next = p.pieceRead(p.nextToQueue++, context.nanoTime(), buffer);
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
            fetcher.pump();
        }
    }

    @Override
    public void closed(PiecedBlock p) {
        List<RegisteredBuffer> release = new ArrayList<>();
        synchronized (fetcher) {
            if (pieced.remove(p)) {
                drop(p, release);
                HeldOutputs.end(p);
            }
        }
        release.forEach(RegisteredBuffer::release); // pieces in flight are released as they land
    }

    /** A piece landed: kept for its consumer (the block handed over at its first piece), or released if it is gone. */
    void landed(Read r) {
        PiecedBlock p = r.pieced;
        boolean handOver;
        synchronized (fetcher) {
            if (!pieced.contains(p)) { // failed alone (its listener told) or closed by its consumer
                r.buffer.release();
                return;
            }
            // Handed over before it lands: a failure from now on goes to the stream, never to the listener.
            handOver = !p.handedOver;
            p.handedOver = true;
        }
        if (!p.landed(r.piece, r.buffer, r.lead)) {
            r.buffer.release(); // the fetch failed meanwhile: the stream says so
        }
        synchronized (fetcher) {
            if (p.allLanded() && pieced.remove(p)) {
                HeldOutputs.end(p);
            }
        }
        if (handOver) {
            Outcomes.deliver(p.wanted, new FetchedBlock(p));
        }
    }

    /**
     * Under the lock: a read of {@code r}'s block waited past half the lease; it is set aside, with its
     * buffer, until the block is described again. True if the block was not set aside before (it is
     * to be asked for).
     */
    boolean park(Read r) {
        boolean first = r.pieced.parked == null;
        if (first) {
            r.pieced.parked = new ArrayList<>();
        }
        r.pieced.parked.add(r);
        return first;
    }

    /**
     * Under the lock, the fetcher failing: takes every one out, the buffers of their queued and
     * set-aside pieces into {@code release}; those handed over (their stream is told) apart from those
     * not yet (their listener is).
     */
    void drain(List<PiecedBlock> handedOver, List<Wanted> notHandedOver, List<RegisteredBuffer> release) {
        for (PiecedBlock p : pieced) {
            drop(p, release);
            if (p.handedOver) {
                handedOver.add(p);
            } else {
                notHandedOver.add(p.wanted);
            }
        }
        pieced.clear();
    }

    boolean isEmpty() {
        return pieced.isEmpty();
    }
}
