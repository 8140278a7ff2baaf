package org.rdmashuffle.core.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The process-wide bound on reads in flight: bytes (so fetched data cannot outgrow memory) and
 * chains (so a flush of every outstanding request still fits the completion queue). A single chain
 * larger than the byte bound is let through when nothing else is in flight, as Spark does. Peers
 * that found no room wait here and are resumed by {@link #wakeWaiters()}.
 */
public final class FetchBudget {
    private final long maxBytes;
    private final int maxChains;
    private long bytes;
    private int chains;
    /** Bytes of the chains posted and not completed: {@link #bytes} less what posters hold reserved meanwhile. */
    private long postedBytes;
    private long peakBytes;
    private long requestsPosted;
    private long blocksPosted;
    private final Set<PeerFetcher> waiting = ConcurrentHashMap.newKeySet();

    public FetchBudget(long maxBytes, int maxChains) {
        this.maxBytes = maxBytes;
        this.maxChains = maxChains;
    }

    synchronized boolean tryAcquire(long chainBytes) {
        if (chains >= maxChains || (bytes > 0 && bytes + chainBytes > maxBytes)) {
            return false;
        }
        bytes += chainBytes;
        chains++;
        return true;
    }

    /**
     * Gives back bytes reserved by {@link #tryAcquire} and not posted (the reads that found no buffer, a
     * post that failed), and the chain too if {@code chain}.
     */
    synchronized void release(long chainBytes, boolean chain) {
        bytes -= chainBytes;
        if (chain) {
            chains--;
        }
    }

    /** A chain {@link #posted} is over (completed, failed, or its connection retired): its bytes and itself given back. */
    synchronized void completed(long chainBytes) {
        bytes -= chainBytes;
        postedBytes -= chainBytes;
        chains--;
    }

    void await(PeerFetcher f) {
        waiting.add(f);
    }

    /** Whether any peer waits for room (so a release is worth a wake-up). */
    public boolean hasWaiters() {
        return !waiting.isEmpty();
    }

    /** Lets every waiting peer try again; call with no fetcher's lock held. */
    public void wakeWaiters() {
        if (waiting.isEmpty()) {
            return;
        }
        List<PeerFetcher> ready = new ArrayList<>(waiting);
        waiting.removeAll(ready);
        ready.forEach(PeerFetcher::pump);
    }

    public synchronized long bytesInFlight() {
        return bytes;
    }

    /**
     * A chain of {@code chainBytes} (reserved by {@link #tryAcquire}, each read with its buffer) is
     * posted: in flight until {@link #completed}. Only posted bytes make the peak: a poster's reservation
     * for reads that then find no buffer is given back unread.
     */
    synchronized void posted(int requests, int blocks, long chainBytes) {
        requestsPosted += requests;
        blocksPosted += blocks;
        postedBytes += chainBytes;
        peakBytes = Math.max(peakBytes, postedBytes);
    }

    /** RDMA_READ work requests posted since start. */
    public synchronized long readRequestsPosted() {
        return requestsPosted;
    }

    /** Blocks those requests read: more blocks than requests means contiguous blocks were coalesced. */
    public synchronized long blocksRead() {
        return blocksPosted;
    }

    /** The most bytes of posted reads ever in flight at once (each read has its fetch buffer, so at most those). */
    public synchronized long peakBytesInFlight() {
        return peakBytes;
    }

    public synchronized int chainsInFlight() {
        return chains;
    }
}
