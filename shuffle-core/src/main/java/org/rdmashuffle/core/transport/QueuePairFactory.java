package org.rdmashuffle.core.transport;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.SendOps;

/**
 * Creates RC queue pairs on a tenant's PD, receiving into its SRQ, with their completions spread
 * round-robin over the engine's pollers (a CQ belongs to the context, so tenants share them).
 */
public final class QueuePairFactory {
    private final CompletionPoller[] pollers;
    private final int maxSendWr;
    private final int maxReadSge;
    private final EngineConfig.PostPath postPath;
    private int next;

    public QueuePairFactory(CompletionPoller[] pollers, int maxSendWr, int maxReadSge, EngineConfig.PostPath postPath) {
        this.pollers = pollers.clone();
        this.maxSendWr = maxSendWr;
        this.maxReadSge = maxReadSge;
        this.postPath = postPath;
    }

    public QueuePair create(TenantDomain tenant) {
        CompletionPoller p;
        synchronized (this) {
            p = pollers[next];
            next = (next + 1) % pollers.length;
        }
        QueuePairConfig qc = new QueuePairConfig(p.completionQueue(), p.completionQueue(), tenant.srq(), maxSendWr, 1, maxReadSge,
                1, 0, false);
        if (postPath == EngineConfig.PostPath.BUILDER) {
            qc = qc.withSendOps(SendOps.RDMA_READ | SendOps.SEND);
        }
        return tenant.pd().createQueuePair(qc);
    }

    /** Closes what a failed set-up had made (best effort: the set-up's own failure is what matters). */
    public static void closeAll(QueuePair[] qps) {
        for (QueuePair qp : qps) {
            if (qp != null) {
                try {
                    qp.close();
                } catch (RuntimeException ignored) {
                    // already failing
                }
            }
        }
    }
}
