package org.rdmashuffle.core.transport;

import org.rdmashuffle.verbs.WorkCompletions;

/**
 * Routes each completion of a poller's batch by the kind its wr_id carries ({@link WorkRequestIds}):
 * receives, metadata sends, read chains. A handler that throws costs only its own completion, never
 * the rest of the batch (those would otherwise be lost: the CQ hands each completion out once), whatever
 * it throws, an {@link Error} too.
 */
public final class CompletionDispatcher implements CompletionPoller.Handler {
    private static final System.Logger LOG = System.getLogger(CompletionDispatcher.class.getName());

    /** One kind's handler: completion {@code i} of {@code wcs}, whose wr_id carries {@code value}. */
    @FunctionalInterface
    public interface KindHandler {
        void handle(WorkCompletions wcs, int i, long value);
    }

    private final KindHandler receives;
    private final KindHandler sends;
    private final KindHandler reads;

    public CompletionDispatcher(KindHandler receives, KindHandler sends, KindHandler reads) {
        this.receives = receives;
        this.sends = sends;
        this.reads = reads;
    }

    @Override
    public void handle(WorkCompletions wcs, int n) {
        for (int i = 0; i < n; i++) {
            long wrId = wcs.wrId(i);
            long value = WorkRequestIds.value(wrId);
            try {
                switch (WorkRequestIds.kind(wrId)) {
                    case WorkRequestIds.RECEIVE -> receives.handle(wcs, i, value);
                    case WorkRequestIds.SEND -> sends.handle(wcs, i, value);
                    case WorkRequestIds.READ -> reads.handle(wcs, i, value);
                    default -> LOG.log(System.Logger.Level.WARNING, "completion with unknown wr_id 0x" + Long.toHexString(wrId));
                }
            } catch (RuntimeException | Error e) {
                LOG.log(System.Logger.Level.ERROR, "rdma-shuffle: handling the completion of wr_id 0x" + Long.toHexString(wrId)
                        + " (" + wcs.status(i) + ") failed; the batch goes on", e);
            }
        }
    }
}
