package org.rdmashuffle.core.transport;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.QueuePairEndpoint;
import org.rdmashuffle.verbs.SendOps;
import org.rdmashuffle.verbs.VerbsException;

/**
 * Creates RC queue pairs on a tenant's PD, receiving into its SRQ, with their completions spread
 * round-robin over the engine's pollers (a CQ belongs to the context, so tenants share them). Sized
 * by role: a fetching QP posts read chains (many work requests of many SGEs) and its requests; a
 * serving QP only SENDs answers, one SGE each, at most as many at once as its tenant has send
 * buffers -- on a NIC its send queue is a tenth of a fetching one's, times every reducer served.
 * A node service's serving QPs are passive ({@link QueuePairConfig#passive}): the reducer's endpoint
 * names an address and port, and a service that dialled them could be made to connect anywhere.
 */
public final class QueuePairFactory {
    private final CompletionPoller[] pollers;
    private final int fetchingSendWr;
    private final int servingSendWr;
    private final int maxReadSge;
    private final EngineConfig.PostPath postPath;
    private final boolean passiveServing;
    /** Serving QPs also post memory-window binds (on the builder path, the window ops enabled). */
    private final boolean servingWindows;
    private int next;

    /**
     * @param fetchingSendWr a fetching QP's send queue: read chains in flight plus its requests
     * @param servingSendWr a serving QP's: the SENDs its tenant can have outstanding
     */
    public QueuePairFactory(CompletionPoller[] pollers, int fetchingSendWr, int servingSendWr, int maxReadSge,
                            EngineConfig.PostPath postPath) {
        this(pollers, fetchingSendWr, servingSendWr, maxReadSge, postPath, false, false);
    }

    /**
     * @param passiveServing serving QPs never initiate their connection (a node's service: reducers dial it)
     * @param servingWindows serving QPs post memory-window binds too ({@code servingSendWr} counts them)
     */
    public QueuePairFactory(CompletionPoller[] pollers, int fetchingSendWr, int servingSendWr, int maxReadSge,
                            EngineConfig.PostPath postPath, boolean passiveServing, boolean servingWindows) {
        this.passiveServing = passiveServing;
        this.servingWindows = servingWindows;
        this.pollers = pollers.clone();
        this.fetchingSendWr = fetchingSendWr;
        this.servingSendWr = servingSendWr;
        this.maxReadSge = maxReadSge;
        this.postPath = postPath;
    }

    public QueuePair create(TenantDomain tenant, DataConnection.Role role) {
        CompletionPoller p;
        synchronized (this) {
            p = pollers[next];
            next = (next + 1) % pollers.length;
        }
        boolean fetching = role == DataConnection.Role.FETCHING;
        QueuePairConfig qc = new QueuePairConfig(p.completionQueue(), p.completionQueue(), tenant.srq(),
                fetching ? fetchingSendWr : servingSendWr, 1, fetching ? maxReadSge : 1, 1, 0, false);
        if (postPath == EngineConfig.PostPath.BUILDER) {
            qc = qc.withSendOps(fetching ? SendOps.RDMA_READ | SendOps.SEND
                    : servingWindows ? SendOps.SEND | SendOps.WINDOW_OPS : SendOps.SEND);
        }
        if (!fetching && passiveServing) {
            qc = qc.asPassive();
        }
        return tenant.pd().createQueuePair(qc);
    }

    /**
     * Connects {@code qp} to the peer's endpoint. On RoCE, moving to RTR resolves the peer GID's
     * Ethernet address; when no neighbour answers, the kernel says ETIMEDOUT (EHOSTUNREACH,
     * ENETUNREACH: no route). That failure is rethrown naming both GIDs and what to check.
     */
    public static void connect(QueuePair qp, QueuePairEndpoint theirs, ConnectOptions options) {
        try {
            qp.connect(theirs, options);
        } catch (VerbsException e) {
            if (e.errno() == Errno.ETIMEDOUT || e.errno() == EHOSTUNREACH || e.errno() == ENETUNREACH) {
                throw new VerbsException(e.call(), e.errno(), org.rdmashuffle.verbs.Trouble.GID_UNREACHABLE.line(
                        "the peer's GID " + theirs.gid() + " cannot be reached from our GID[" + options.gidIndex() + "] on port "
                                + options.portNumber() + " (no route, or no neighbour answered for its address)",
                        "a route between the two GIDs' addresses", "check `ip route get` and `ip neigh` for it, that the "
                                + "peer's engine bound the address other hosts reach it at (bindAddress), and that UDP 4791 "
                                + "(RoCE v2) passes"));
            }
            throw e;
        }
    }

    private static final int ENETUNREACH = 101;
    private static final int EHOSTUNREACH = 113;

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
