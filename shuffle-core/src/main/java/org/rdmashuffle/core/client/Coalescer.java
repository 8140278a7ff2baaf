package org.rdmashuffle.core.client;

import org.rdmashuffle.core.server.BlockDescriptor;
import org.rdmashuffle.core.transport.ReadPlan;

/**
 * Turns reads into read requests: a read that continues the previous one in the same remote region
 * joins its request as one more scatter entry, while the request has SGEs left and stays under
 * {@link #MAX_REQUEST_BYTES}. Every read is at most one fetch buffer, so it is one entry of one request.
 */
final class Coalescer {
    /** Largest single read request: far below the 2^31 an SGE can say. */
    static final long MAX_REQUEST_BYTES = 1L << 30;

    private final int maxSge;
    private final ReadPlan plan;
    private boolean open;
    private int rkey;
    private long end;
    private int sges;
    private long requestBytes;

    /** @param plan where requests go; null to count them only */
    Coalescer(int maxSge, ReadPlan plan) {
        this.maxSge = maxSge;
        this.plan = plan;
    }

    /** Requests {@code d} would add after the reads added so far: 0 or 1. */
    int requestsFor(BlockDescriptor d) {
        return joins(d) ? 0 : 1;
    }

    private boolean joins(BlockDescriptor d) {
        return open && d.rkey() == rkey && d.address() == end && sges < maxSge && requestBytes + d.length() <= MAX_REQUEST_BYTES;
    }

    void add(BlockDescriptor d, long localAddress, int lkey) {
        if (joins(d)) {
            sges++;
            requestBytes += d.length();
            if (plan != null) {
                plan.sge(localAddress, (int) d.length(), lkey);
            }
        } else {
            open = true;
            sges = 1;
            requestBytes = d.length();
            if (plan != null) {
                plan.read(d.rkey(), d.address()).sge(localAddress, (int) d.length(), lkey);
            }
        }
        rkey = d.rkey();
        end = d.address() + d.length();
    }
}
