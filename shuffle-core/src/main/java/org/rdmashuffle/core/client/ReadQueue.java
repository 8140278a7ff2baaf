package org.rdmashuffle.core.client;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import org.rdmashuffle.core.buffer.RegisteredBuffer;

/**
 * The reads a {@link PeerFetcher} has waiting for room in its bounds (chains and bytes in flight,
 * fetch buffers), in the order they will be posted, and the two clocks that bound a read's wait.
 * Past half the peer's lease since its description a read is described again (the peer may release
 * the region after a lease). Past the fetch timeout in the queue it fails -- but only while its
 * fetcher posts nothing, as reads behind others being read are making progress. Not thread-safe: its
 * fetcher's lock.
 */
final class ReadQueue implements Iterable<Read> {
    private final ArrayDeque<Read> reads = new ArrayDeque<>();
    private final long timeoutNanos;
    private final long leaseNanos;
    /** When its fetcher last posted a chain. */
    private long lastPosted;
    /** When it was last looked through for stale reads: not on every pump (a profile found that O(queue) each time). */
    private long lastStaleScan;

    /**
     * @param timeoutNanos the fetch timeout: a read queued that long with nothing posted fails
     * @param leaseNanos the peer's lease on a described region: a read described half of it ago is described again
     */
    ReadQueue(long timeoutNanos, long leaseNanos, long now) {
        this.lastPosted = now;
        this.timeoutNanos = timeoutNanos;
        this.leaseNanos = leaseNanos;
    }

    void add(Read r) {
        reads.add(r);
    }

    /** Ahead of the others: a piece whose consumer is waiting for it. */
    void addFirst(Read r) {
        reads.addFirst(r);
    }

    Read peek() {
        return reads.peek();
    }

    boolean isEmpty() {
        return reads.isEmpty();
    }

    int size() {
        return reads.size();
    }

    void remove(Read r) {
        reads.remove(r);
    }

    /** From the head: the order they will be posted in. */
    @Override
    public Iterator<Read> iterator() {
        return reads.iterator();
    }

    /** The first {@code n} reads were posted as one chain: out of the queue, and the fetcher made progress. */
    void posted(int n, long now) {
        for (int k = 0; k < n; k++) {
            reads.poll();
        }
        lastPosted = now;
    }

    /** Takes out {@code p}'s queued pieces, adding the buffers they hold to {@code release}. */
    void removePieces(PiecedBlock p, List<RegisteredBuffer> release) {
        for (Iterator<Read> it = reads.iterator(); it.hasNext(); ) {
            Read r = it.next();
            if (r.pieced == p) {
                it.remove();
                HeldOutputs.end(r);
                if (r.buffer != null) {
                    release.add(r.buffer);
                }
            }
        }
    }

    /**
     * Takes out the reads described more than half a lease ago; looks only every 1/16 of the lease
     * (so a read is posted at most 9/16 of a lease after its description), null in between or if none.
     */
    List<Read> takeStale(long now) {
        if (reads.isEmpty() || now - lastStaleScan < leaseNanos / 16) {
            return null;
        }
        lastStaleScan = now;
        List<Read> stale = null;
        for (Iterator<Read> it = reads.iterator(); it.hasNext(); ) {
            Read r = it.next();
            if (now - r.describedAt > leaseNanos / 2) {
                it.remove();
                (stale == null ? stale = new ArrayList<>() : stale).add(r);
            }
        }
        return stale;
    }

    /** If nothing was posted for a whole timeout: takes out the reads queued longer than that (null if none). */
    List<Read> takeExpired(long now) {
        if (now - lastPosted <= timeoutNanos) {
            return null;
        }
        List<Read> expired = null;
        for (Iterator<Read> it = reads.iterator(); it.hasNext(); ) {
            Read r = it.next();
            if (now - r.queuedAt > timeoutNanos) {
                it.remove();
                (expired == null ? expired = new ArrayList<>() : expired).add(r);
            }
        }
        return expired;
    }

    /** Takes out every read: its fetcher failed. */
    List<Read> drain() {
        List<Read> all = new ArrayList<>(reads);
        reads.clear();
        return all;
    }
}
