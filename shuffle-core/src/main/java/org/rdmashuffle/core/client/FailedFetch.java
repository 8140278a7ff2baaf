package org.rdmashuffle.core.client;

import java.util.ArrayList;
import java.util.List;

import org.rdmashuffle.core.client.AwaitedRequests.Request;

/**
 * What a failed {@link PeerFetcher} owes, and its telling: every block of its chains, requests,
 * queued reads and pieced blocks, and those waiting for a layout, failed once, with the reason; the
 * buffers its chains held given back. Called once the connection's queue pairs are destroyed (until
 * then the device may still write into those buffers), with no lock held.
 */
final class FailedFetch {
    private FailedFetch() {
    }

    /** Fails what {@code peer}'s fetcher owed when it failed with {@code cause}. */
    static void report(String peer, Throwable cause, List<ChainsInFlight.Chain> chains, List<Request> requests,
                       List<Read> reads, List<Wanted> notHandedOver, List<Wanted> waitingForLayouts,
                       List<PiecedBlock> handedOver) {
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
        Outcomes.failed(peer, once(owed), BlockFetchException.Kind.FAILED, reason, cause);
        for (PiecedBlock p : handedOver) {
            p.fail(new BlockFetchException(peer, List.of(p.wanted.id), BlockFetchException.Kind.FAILED, reason, cause));
        }
    }

    /**
     * Each block once: an answer whose reading threw part-way leaves its request awaited (to fail with
     * the connection) while some of its blocks were queued as reads already.
     */
    private static List<Wanted> once(List<Wanted> owed) {
        java.util.Set<Wanted> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>(owed.size()));
        List<Wanted> each = new ArrayList<>(owed.size());
        for (Wanted w : owed) {
            if (seen.add(w)) {
                each.add(w);
            }
        }
        return each;
    }

    private static String reasonOf(Throwable cause) {
        String m = cause.getMessage();
        return cause.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }
}
