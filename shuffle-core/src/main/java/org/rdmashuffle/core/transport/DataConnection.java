package org.rdmashuffle.core.transport;

import org.rdmashuffle.core.config.EngineConfig.PostPath;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.ScatterGatherList;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequest;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkRequestBuilder;
import org.rdmashuffle.verbs.WorkRequestOpcode;

/**
 * The RC queue pairs between this process and one peer, in one direction of use (we fetch from it,
 * or we serve it), and the posting of work onto them. Posts alternate over the queue pairs. All
 * posting and the close are serialised on this object, so a queue pair is never destroyed under a
 * post and builder sessions ({@code ibv_wr_start..complete}) never interleave.
 */
public final class DataConnection implements AutoCloseable {
    /** Which side of the shuffle this connection carries. */
    public enum Role { FETCHING, SERVING }

    private final String peer;
    /** The GID the peer's queue pairs answer from (null if unknown): named when it stops answering. */
    private final org.rdmashuffle.verbs.Gid peerGid;
    private final Role role;
    private final TenantDomain tenant;
    private final int peerReceiveBufferSize;
    private final QueuePair[] qps;
    private final PostPath path;
    private final boolean sgeListBroken;
    private final int maxChain;
    private final int maxSge;
    /**
     * The native chain {@code ibv_post_send} posts from, and the SGE list of a builder's multi-SGE read:
     * made at their first use (guarded by this), as a serving connection never posts a read and on the
     * builder path never a chain at all -- made at once they cost every idle served peer some KiB of
     * native memory and 130 objects (issue 52 item 8).
     */
    private SendWorkRequests chain;
    private ScatterGatherList sgeList;
    private int next;
    private boolean closed;
    /** Its queue pairs were moved to ERR for its retirement ({@link #moveToError}): nothing more is posted. */
    private boolean inError;
    /** Its owner: set once, before the connection is tracked. */
    private volatile ConnectionHandler handler;
    /** Set by the first {@link ConnectionTable#retire}: its owner hears of it once. */
    private final java.util.concurrent.atomic.AtomicBoolean retired = new java.util.concurrent.atomic.AtomicBoolean();
    /** Sends of this connection waiting for a slot of its tenant (guarded by the tenant's queue, {@link MetadataSender}). */
    int queuedSends;
    /** Set once the engine has decided to close it (a protocol error): what it receives from then on is dropped. */
    private final java.util.concurrent.atomic.AtomicBoolean closing = new java.util.concurrent.atomic.AtomicBoolean();
    /** Set by the first failure reported of its sends: the others (a flush of every one) are not reported again. */
    private final java.util.concurrent.atomic.AtomicBoolean failureReported = new java.util.concurrent.atomic.AtomicBoolean();

    /**
     * @param tenant whose PD the queue pairs are on: every lkey and rkey they use is of that PD
     * @param peerReceiveBufferSize the peer's receive buffer size, from the connection exchange
     * @param qps connected queue pairs, owned from now on
     * @param maxChain the most read requests one chain posts
     * @param sgeListBroken post multi-SGE reads through {@code ibv_post_send} even on the builder path
     *     (see {@link ProviderQuirks})
     * @param peerGid the GID of the peer's queue pairs, from the connection exchange
     */
    public DataConnection(String peer, Role role, TenantDomain tenant, int peerReceiveBufferSize, QueuePair[] qps,
                          PostPath path, int maxChain, int maxSge, boolean sgeListBroken, org.rdmashuffle.verbs.Gid peerGid) {
        this.peer = peer;
        this.peerGid = peerGid;
        this.role = role;
        this.tenant = tenant;
        this.peerReceiveBufferSize = peerReceiveBufferSize;
        this.qps = qps.clone();
        this.path = path;
        this.sgeListBroken = sgeListBroken;
        this.maxChain = maxChain;
        this.maxSge = maxSge;
    }

    /** The chain, made now if not yet: room for one request on a serving connection (it posts no reads). Under this. */
    private SendWorkRequests chain() {
        if (chain == null) {
            chain = role == Role.SERVING ? SendWorkRequests.allocate(1, 1) : SendWorkRequests.allocate(maxChain, maxSge);
        }
        return chain;
    }

    /** The builder path's SGE list, made now if not yet. Under this. */
    private ScatterGatherList sgeList() {
        if (sgeList == null) {
            sgeList = ScatterGatherList.allocate(maxSge);
        }
        return sgeList;
    }

    /** "host:port" of the peer's control endpoint: what errors name. */
    public org.rdmashuffle.verbs.Gid peerGid() {
        return peerGid;
    }

    public String peer() {
        return peer;
    }

    public Role role() {
        return role;
    }

    /** The application whose protection domain this connection's queue pairs are on. */
    public TenantDomain tenant() {
        return tenant;
    }

    /** The peer's receive buffers hold this many bytes: no message to it may be longer. */
    public int peerReceiveBufferSize() {
        return peerReceiveBufferSize;
    }

    public int queuePairs() {
        return qps.length;
    }

    public int qpNumber(int i) {
        return qps[i].qpNumber();
    }

    /** Its owner, what the router hands its completions to. */
    public ConnectionHandler handler() {
        return handler;
    }

    /** Sets its owner; once, before it is tracked ({@link ConnectionTable#track} refuses one without). */
    public void handle(ConnectionHandler h) {
        if (handler != null) {
            throw new IllegalStateException(this + " has an owner already");
        }
        handler = java.util.Objects.requireNonNull(h);
    }

    /** True for the first caller only: the one retire that tells the owner. */
    boolean markRetired() {
        return retired.compareAndSet(false, true);
    }

    public synchronized boolean isClosed() {
        return closed;
    }

    /**
     * Marks the connection as closing; true only for the first caller, who arranges its close: a peer
     * that keeps sending bad messages costs one close, not one per message.
     */
    public boolean markClosing() {
        return closing.compareAndSet(false, true);
    }

    /** True for the first failure of its sends reported, false for the others: one failure is handled, not a flush's worth. */
    public boolean markFailureReported() {
        return failureReported.compareAndSet(false, true);
    }

    /** Whether it is being closed (marked, or closed already): its messages are no longer delivered. */
    public boolean isClosing() {
        return closing.get() || isClosed();
    }

    /** Posts one signaled SEND of {@code length} bytes at {@code address}. */
    public synchronized void postSend(long wrId, long address, int length, int lkey) {
        QueuePair qp = nextQueuePair();
        if (path == PostPath.BUILDER) {
            WorkRequestBuilder b = qp.workRequestBuilder();
            b.start();
            try {
                b.wrId(wrId).flags(SendFlags.SIGNALED).send().sge(lkey, address, length);
            } catch (RuntimeException e) {
                b.abort();
                throw e;
            }
            b.complete();
        } else {
            SendWorkRequests c = chain();
            c.get(0).reset().wrId(wrId).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, address, length, lkey).sgeCount(1);
            qp.postSend(c, 1);
        }
    }

    /**
     * Posts one bind of type 2 {@code window} over the whole of {@code region}, readable only, under
     * {@code key} (normally {@code MemoryWindow.nextRkey} of its current one), on this connection's
     * queue pair (one: a type 2 window is bound to the QP its bind is posted on). The window has its
     * new key once this returns; a SEND posted after it reaches the peer after the bind took effect
     * (a send queue is processed in order).
     */
    public synchronized void postWindowBind(long wrId, org.rdmashuffle.verbs.MemoryWindow window, int key,
                                            org.rdmashuffle.verbs.MemoryRegion region, boolean signaled) {
        QueuePair qp = onlyQueuePair();
        int access = org.rdmashuffle.verbs.Access.REMOTE_READ;
        if (path == PostPath.BUILDER) {
            WorkRequestBuilder b = qp.workRequestBuilder();
            b.start();
            try {
                b.wrId(wrId).flags(signaled ? SendFlags.SIGNALED : 0).bindWindow(window, key, region, region.address(), region.length(), access);
            } catch (RuntimeException e) {
                b.abort();
                throw e;
            }
            b.complete();
        } else {
            SendWorkRequests c = chain();
            c.get(0).reset().wrId(wrId).flags(signaled ? SendFlags.SIGNALED : 0)
                    .bindWindow(window, key, region, region.address(), region.length(), access);
            qp.postSend(c, 1);
        }
    }

    private QueuePair onlyQueuePair() {
        if (qps.length != 1) {
            throw new IllegalStateException(this + " has " + qps.length + " queue pairs: windows need one");
        }
        return nextQueuePair();
    }

    /**
     * Posts the reads of {@code plan} as one chain on one queue pair, every request carrying {@code
     * wrId} and only the last one signaled: RC completes in order, so its completion means all are done,
     * and an error completes with the same id whichever request failed.
     */
    public synchronized void postReads(long wrId, ReadPlan plan) {
        if (role == Role.SERVING) {
            throw new IllegalStateException(this + " serves: it posts no reads");
        }
        QueuePair qp = nextQueuePair();
        int n = plan.requests();
        if (path == PostPath.BUILDER && !(sgeListBroken && plan.maxSgesPerRequest() > 1)) {
            WorkRequestBuilder b = qp.workRequestBuilder();
            b.start();
            try {
                for (int i = 0; i < n; i++) {
                    b.wrId(wrId).flags(i == n - 1 ? SendFlags.SIGNALED : 0).rdmaRead(plan.rkey(i), plan.remoteAddress(i));
                    int sges = plan.sgeCount(i);
                    if (sges == 1) {
                        b.sge(plan.sgeLkey(i, 0), plan.sgeAddress(i, 0), plan.sgeLength(i, 0));
                    } else {
                        ScatterGatherList list = sgeList();
                        for (int s = 0; s < sges; s++) {
                            list.set(s, plan.sgeAddress(i, s), plan.sgeLength(i, s), plan.sgeLkey(i, s));
                        }
                        b.sgeList(list, sges);
                    }
                }
            } catch (RuntimeException e) {
                b.abort();
                throw e;
            }
            b.complete();
        } else {
            SendWorkRequests c = chain();
            for (int i = 0; i < n; i++) {
                SendWorkRequest r = c.get(i).reset().wrId(wrId).opcode(WorkRequestOpcode.RDMA_READ)
                        .flags(i == n - 1 ? SendFlags.SIGNALED : 0).remote(plan.remoteAddress(i), plan.rkey(i));
                int sges = plan.sgeCount(i);
                for (int s = 0; s < sges; s++) {
                    r.sge(s, plan.sgeAddress(i, s), plan.sgeLength(i, s), plan.sgeLkey(i, s));
                }
                r.sgeCount(sges);
            }
            qp.postSend(c, n);
        }
    }

    private QueuePair nextQueuePair() {
        if (closed || inError) {
            throw new IllegalStateException("connection to " + peer + " is closed");
        }
        QueuePair qp = qps[next];
        next = (next + 1) % qps.length;
        return qp;
    }

    /**
     * Moves the queue pairs to ERR ahead of {@link #close} (what was posted is flushed, nothing more
     * runs or is posted), so that what is bound to them can be freed before they are destroyed: rxe
     * takes some 50 s to destroy a queue pair a type 2 memory window is still bound to (the window
     * holds a reference its cleanup waits for). Idempotent.
     */
    public synchronized void moveToError() {
        if (closed || inError) {
            return;
        }
        inError = true;
        for (QueuePair qp : qps) {
            try {
                qp.modifyToError();
            } catch (RuntimeException ignored) {
                // already in error or gone: destroying it is what matters
            }
        }
    }

    /** Whether work may still be posted on it: not closed, nor moved to ERR for its retirement. */
    public synchronized boolean acceptsPosts() {
        return !closed && !inError;
    }

    /**
     * Moves the queue pairs to ERR (unless {@link #moveToError} did) and destroys them: once this
     * returns the device writes no more into any buffer a read of this connection named, so those
     * buffers may be reused. Idempotent.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        moveToError();
        closed = true;
        CloseSteps steps = new CloseSteps(); // one QP that fails to go does not keep the others (or the lists) alive
        for (QueuePair qp : qps) {
            steps.attempt(qp::close);
        }
        if (chain != null) {
            steps.attempt(chain::close);
        }
        if (sgeList != null) {
            steps.attempt(sgeList::close);
        }
        steps.rethrow();
    }

    @Override
    public String toString() {
        return role.name().toLowerCase() + " connection to " + peer;
    }
}
