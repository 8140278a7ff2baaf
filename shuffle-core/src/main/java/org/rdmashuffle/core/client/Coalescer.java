package org.rdmashuffle.core.client;

import org.rdmashuffle.core.transport.ReadPlan;

/**
 * Turns reads into read requests: a read that continues the previous one in the same remote region
 * joins its request as one more scatter entry, while the request has SGEs left and stays under
 * {@link #MAX_REQUEST_BYTES}. Every read is at most one fetch buffer, so it is one entry of one request.
 * A read with a {@linkplain Read#lead lead} starts its own request there (and, with reads from page
 * boundaries, one SGE per request keeps every buffer's first byte a packet's first).
 * One per fetcher, {@linkplain #reset reset} for each chain (it allocates nothing per read).
 */
final class Coalescer {
    /** Largest single read request: far below the 2^31 an SGE can say. */
    static final long MAX_REQUEST_BYTES = 1L << 30;

    private final int maxSge;
    private ReadPlan plan;
    private boolean open;
    private int rkey;
    private long end;
    private int sges;
    private long requestBytes;

    Coalescer(int maxSge) {
        this.maxSge = maxSge;
    }

    /** Starts a chain: requests go to {@code plan}, or are only counted if it is null. */
    Coalescer reset(ReadPlan plan) {
        this.plan = plan;
        open = false;
        return this;
    }

    /** Requests {@code r} would add after the reads added so far: 0 or 1. */
    int requestsFor(Read r) {
        return joins(r) ? 0 : 1;
    }

    private boolean joins(Read r) {
        return open && r.lead == 0 && r.rkey == rkey && r.address == end && sges < maxSge
                && requestBytes + r.length <= MAX_REQUEST_BYTES;
    }

    void add(Read r, long localAddress, int lkey) {
        if (joins(r)) {
            sges++;
            requestBytes += r.length;
            if (plan != null) {
                plan.sge(localAddress, (int) r.length, lkey);
            }
        } else {
            open = true;
            sges = 1;
            requestBytes = r.span();
            if (plan != null) {
                plan.read(r.rkey, r.address - r.lead).sge(localAddress, (int) r.span(), lkey);
            }
        }
        rkey = r.rkey;
        end = r.address + r.length;
    }
}
