package org.rdmashuffle.core.server;

import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.VerbsException;

/**
 * For map outputs registered on demand (ODP): asks the device to fault in a block's pages when a
 * reducer is told where the block is, so its reads do not each wait for a page fault ({@code
 * ibv_advise_mr} PREFETCH, asynchronous). Advice only: a device that cannot take it (EOPNOTSUPP) or
 * refuses it is not asked again, said once in the log; the reads still work, faulting as they go.
 *
 * <p>Called by its registry under the registry's lock, with a region that is registered (so never
 * one being deregistered); from the completion poller or a server thread. Thread-safe.
 */
final class Prefetcher {
    private static final System.Logger LOG = System.getLogger(Prefetcher.class.getName());
    private final ProtectionDomain pd;
    private volatile boolean off;

    Prefetcher(ProtectionDomain pd) {
        this.pd = pd;
    }

    void prefetch(MemoryRegion region, long offset, long length) {
        if (off || length == 0) {
            return;
        }
        try {
            if (!pd.prefetch(region, offset, length)) {
                stop("the device takes no advice on on-demand regions (ibv_advise_mr: EOPNOTSUPP): reads fault pages in");
            }
        } catch (VerbsException | IllegalArgumentException | IllegalStateException e) {
            stop("ibv_advise_mr refused a prefetch (" + e.getMessage() + "): reads fault pages in, no more prefetches");
        }
    }

    private void stop(String why) {
        if (!off) {
            off = true;
            LOG.log(System.Logger.Level.INFO, "rdma-shuffle: " + why);
        }
    }

    boolean stopped() {
        return off;
    }
}
