package org.rdmashuffle.core.client;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import org.rdmashuffle.core.transport.ReadPlan;

/**
 * Turns a {@link PeerFetcher}'s queued reads into posted RDMA_READ chains while the bounds allow:
 * chains in flight to the peer, bytes in flight to it, the process-wide {@link FetchBudget}, and a
 * chain's own ({@code chainLength} requests, {@code maxChainBytes}). Reads next to each other in one
 * remote region become one request scattering into their own buffers ({@link Coalescer}); only a
 * chain's last request is signaled. A chain posts the reads that got buffers, so a fetch never waits
 * on buffers only it could free. With page-aligned reads each read starts on a page boundary, its
 * {@linkplain Read#lead lead} before the block, and joins no other. One per fetcher; runs under its
 * lock (the plan is reused).
 */
final class ChainPoster {
    private final PeerChannel channel;
    private final FetchContext context;
    private final PeerFetcher.Limits limits;
    /** One plan and one coalescer, reused for every chain (under the lock; posting copies the plan). */
    private final ReadPlan plan = new ReadPlan();
    private final Coalescer coalescer;

    ChainPoster(PeerChannel channel, FetchContext context, PeerFetcher.Limits limits) {
        this.channel = channel;
        this.context = context;
        this.limits = limits;
        this.coalescer = new Coalescer(limits.pageAlignedReads() ? 1 : limits.maxSge());
    }

    /**
     * What posting left to do outside the lock: reads that found no buffer because registering one
     * failed ({@code allocationFailure}), each to fail alone; a post that failed, failing the connection.
     */
    record Posted(List<Read> noBuffer, RuntimeException allocationFailure, Throwable postFailed) {
    }

    /** Posts chains from {@code queued} into {@code inFlight} while the bounds allow; {@code waiter} is woken when room comes. */
    Posted post(ReadQueue queued, ChainsInFlight inFlight, PeerFetcher waiter) {
        List<Read> noBuffer = new ArrayList<>(0);
        RuntimeException allocationFailure = null;
        Throwable postFailed = null;
        while (!queued.isEmpty() && inFlight.size() < limits.maxChainsInFlight()) {
            int take = 0;
            long bytes = 0;
            int requests = 0;
            Coalescer sizing = coalescer.reset(null);
            for (Read r : queued) {
                long span = r.align(limits.pageAlignedReads());
                int need = sizing.requestsFor(r);
                if (take > 0 && (requests + need > limits.chainLength() || bytes + span > limits.maxChainBytes())) {
                    break;
                }
                sizing.add(r, 0, 0);
                take++;
                bytes += span;
                requests += need;
            }
            if (inFlight.bytes() > 0 && inFlight.bytes() + bytes > limits.maxBytesInFlight()) {
                break; // resumed when one of ours completes
            }
            if (!context.budget().tryAcquire(bytes)) {
                // Wait first, then look once more: a release between the two would otherwise wake no one.
                context.budget().await(waiter);
                if (!context.budget().tryAcquire(bytes)) {
                    break;
                }
            }
            List<Read> reads = new ArrayList<>(take);
            Iterator<Read> it = queued.iterator();
            Read unregistered = null;
            for (int k = 0; k < take; k++) {
                Read r = it.next();
                // A read that comes with a buffer is a piece in one an earlier piece of its block used: a whole
                // fetch buffer (a piece is more than half of one), so any piece fits with any lead.
                if (r.buffer == null) {
                    try {
                        r.buffer = context.buffers().allocate(r.span());
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
                kept += r.span();
            }
            context.budget().release(bytes - kept, reads.isEmpty());
            if (unregistered != null) {
                queued.remove(unregistered); // failed below, outside the lock
                noBuffer.add(unregistered);
            }
            if (reads.isEmpty()) {
                if (unregistered != null) {
                    continue;
                }
                // Wait for a released buffer (or the timer), then look once more: a release between the
                // two would otherwise wake no one.
                context.budget().await(waiter);
                Read head = queued.peek();
                try {
                    head.buffer = context.buffers().allocate(head.span());
                } catch (RuntimeException e) { // the slab it waited for failed to register: it fails, as above
                    allocationFailure = e;
                    queued.remove(head);
                    noBuffer.add(head);
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
            context.budget().posted(plan.requests(), take, bytes);
        }
        return new Posted(noBuffer, allocationFailure, postFailed);
    }
}
