package org.rdmashuffle.verbs.software;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.security.SecureRandom;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HexFormat;

import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairAttributes;
import org.rdmashuffle.verbs.QueuePairCapabilities;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.QueuePairEndpoint;
import org.rdmashuffle.verbs.QueuePairState;
import org.rdmashuffle.verbs.ReceiveWorkRequests;
import org.rdmashuffle.verbs.SendOps;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.MemoryWindow;
import org.rdmashuffle.verbs.ProviderSupport;
import org.rdmashuffle.verbs.WorkRequestBuilder;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.SharedReceiveQueue;
import org.rdmashuffle.verbs.VerbsException;
import org.rdmashuffle.verbs.WorkCompletionStatus;

/**
 * An RC queue pair of the software provider: the verbs object (state machine, endpoint and token,
 * posting, close) over a {@link Requester} (its send side) and a {@link Responder} (its receive
 * side), joined at RTR to its peer QP over the {@link PeerLink} between the two devices. A remote
 * error completes the failed request with its status and moves the QP to ERR; the requests behind
 * it are flushed, as on hardware, and the peer QP is told (DETACH), while the link stays up for
 * the other QPs on it.
 *
 * <p>Threads: none of its own. Posting never blocks on the network: frames go to the link's writer.
 */
final class SoftQueuePair implements QueuePair, Landing.Guard {
    private static final System.Logger LOG = System.getLogger(SoftQueuePair.class.getName());
    private static final SecureRandom RANDOM = new SecureRandom();
    /** How a never-dialling device's endpoint tokens begin (not a hex digit: no other token begins so). */
    static final String NEVER_DIALS = "~";
    private static final int SUPPORTED_SEND_OPS = SendOps.ALL_BUILDER_OPS | SendOps.WINDOW_OPS;
    /** Connecting to a peer device, and waiting for its answer to a hello or a join, each at most this long. */
    static final int DIAL_TIMEOUT_MILLIS = 10_000;

    private final SoftDevice device;
    final SoftProtectionDomain pd;
    private final int qpNumber;
    private final int initialPsn = RANDOM.nextInt() & 0xFFFFFF;
    private final String token;
    /** Never dials: its peer joins it (QueuePairConfig#passive). */
    private final boolean passive;
    final QueuePairCapabilities capabilities;
    final SoftCompletionQueue sendCq;
    final SoftCompletionQueue recvCq;
    private final SoftSharedReceiveQueue srq;
    final boolean signalAll;
    private final SoftWorkRequestBuilder builder;
    final Requester requester;
    final Responder responder;

    /** Guards the QP's state, its link and the requester's state. */
    final Object lock = new Object();
    volatile QueuePairState state = QueuePairState.RESET;
    private volatile boolean closing;

    private int portNumber;
    private volatile int accessFlags;
    private QueuePairEndpoint remote;
    private volatile ConnectOptions options;

    /** The link this QP is joined over, once joined (set last, after {@link #peerQpn}). */
    private volatile PeerLink link;
    private volatile int peerQpn = -1;
    /**
     * The link this QP is in the joined table of, null before it joins and from the moment it starts
     * to leave: lets the link's loop find the QP of a frame without a boxed table look-up (see
     * {@link PeerLink}'s {@code joinedFor}).
     */
    volatile PeerLink joinedTo;
    /** Frames posted before the QP joined its link (a dialled QP in RTS before the dialler's ATTACH came). */
    private final ArrayDeque<Frame> beforeJoin = new ArrayDeque<>();

    SoftQueuePair(SoftDevice device, SoftProtectionDomain pd, int qpNumber, QueuePairConfig config) {
        if (config.maxSendWr() > SoftContext.MAX_QP_WR || config.maxSendSge() > SoftContext.MAX_SGE
                || config.maxRecvSge() > SoftContext.MAX_SGE || config.maxInlineData() > SoftContext.MAX_INLINE) {
            throw new VerbsException("ibv_create_qp", Errno.EINVAL, "capabilities beyond the device's: " + config);
        }
        this.device = device;
        this.pd = pd;
        this.qpNumber = qpNumber;
        byte[] secret = new byte[16];
        RANDOM.nextBytes(secret);
        this.passive = config.passive();
        // A passive QP marks its token, so that its peer knows to dial it (see initiates).
        this.token = (passive ? NEVER_DIALS : "") + HexFormat.of().formatHex(secret);
        this.capabilities = new QueuePairCapabilities(config.maxSendWr(),
                config.sharedReceiveQueue() == null ? config.maxRecvWr() : 0, config.maxSendSge(),
                config.sharedReceiveQueue() == null ? config.maxRecvSge() : 0,
                Math.max(config.maxInlineData(), 0));
        this.sendCq = (SoftCompletionQueue) config.sendCompletionQueue();
        this.recvCq = (SoftCompletionQueue) config.receiveCompletionQueue();
        this.srq = (SoftSharedReceiveQueue) config.sharedReceiveQueue();
        this.signalAll = config.signalAll();
        if ((config.sendOps() & ~SUPPORTED_SEND_OPS) != 0) {
            throw new VerbsException("ibv_create_qp_ex", Errno.EOPNOTSUPP, "RC QP with send ops "
                    + SendOps.describe(config.sendOps()) + " on " + device.name() + ": it supports "
                    + SendOps.describe(SUPPORTED_SEND_OPS) + " (no FLUSH: a write is visible once it completes; no ATOMIC_WRITE)");
        }
        this.builder = config.sendOps() == 0 ? null : new SoftWorkRequestBuilder(this, config.sendOps(),
                config.maxSendWr(), config.maxSendSge(), Math.max(config.maxInlineData(), 0));
        this.requester = new Requester(this);
        this.responder = new Responder(this, srq);
        if (srq != null) {
            srq.attach(); // last: a QP that failed to be made holds no SRQ
        }
    }

    String issuedToken() {
        return token;
    }

    int accessFlags() {
        return accessFlags;
    }

    /** The peer's rnr_retry setting for our sends (7: retry for as long as the QP lives). */
    int rnrRetry() {
        ConnectOptions o = options;
        return o == null ? 7 : o.rnrRetry();
    }

    @Override
    public int qpNumber() {
        return qpNumber;
    }

    @Override
    public int initialPsn() {
        return initialPsn;
    }

    /** The lid field carries the device's TCP port: the software provider's address is GID + port. */
    @Override
    public QueuePairEndpoint localEndpoint(ConnectOptions opts) {
        SoftDevice.Listener l = device.listener();
        return new QueuePairEndpoint(qpNumber, initialPsn, l.gid(), l.port(), Mtu.MTU_4096, token);
    }

    @Override
    public void connect(QueuePairEndpoint peer, ConnectOptions opts) {
        modifyToInit(opts);
        modifyToReadyToReceive(peer, opts);
        modifyToReadyToSend(opts);
    }

    @Override
    public void modifyToInit(ConnectOptions opts) {
        synchronized (lock) {
            requireState("INIT", QueuePairState.RESET, QueuePairState.INIT);
            portNumber = opts.portNumber();
            accessFlags = opts.remoteAccess();
            state = QueuePairState.INIT;
        }
    }

    @Override
    public void modifyToReadyToReceive(QueuePairEndpoint peer, ConnectOptions opts) {
        synchronized (lock) {
            requireState("RTR", QueuePairState.INIT);
            if (peer.admissionToken() == null) {
                throw new VerbsException("ibv_modify_qp(RTR, QP " + qpNumber + ")", Errno.EINVAL,
                        "the peer's endpoint carries no admission token (is it from the software provider?)");
            }
            if (link != null && peerQpn != peer.qpNumber()) {
                throw new VerbsException("ibv_modify_qp(RTR, QP " + qpNumber + ")", Errno.EINVAL,
                        "joined to QP " + peerQpn + " of the peer, not " + peer.qpNumber());
            }
            remote = peer;
            state = QueuePairState.RTR;
        }
        if (initiates(peer)) {
            dial(peer);
        }
    }

    @Override
    public void modifyToReadyToSend(ConnectOptions opts) {
        synchronized (lock) {
            requireState("RTS", QueuePairState.RTR);
            options = opts;
            state = QueuePairState.RTS;
        }
    }

    @Override
    public void modifyToError() {
        synchronized (lock) {
            enterError(null, true);
        }
    }

    private void requireState(String target, QueuePairState... allowed) {
        for (QueuePairState s : allowed) {
            if (state == s) {
                return;
            }
        }
        throw new VerbsException("ibv_modify_qp(" + target + ", QP " + qpNumber + ")", Errno.EINVAL,
                "cannot go to " + target + " from " + state);
    }

    @Override
    public QueuePairAttributes query() {
        synchronized (lock) {
            return new QueuePairAttributes(state, remote == null ? null : Mtu.MTU_4096,
                    remote == null ? 0 : remote.qpNumber(), initialPsn, remote == null ? 0 : remote.psn(), accessFlags,
                    portNumber, options == null ? 0 : options.maxRdAtomic(), options == null ? 0 : options.maxDestRdAtomic(),
                    options == null ? 0 : options.minRnrTimer(), options == null ? 0 : options.timeout(),
                    options == null ? 0 : options.retryCount(), options == null ? 0 : options.rnrRetry(), capabilities);
        }
    }

    @Override
    public QueuePairCapabilities capabilities() {
        return capabilities;
    }

    // ---------------------------------------------------------------- joining the peer QP

    /**
     * Which of two QPs dials: never a passive one (a service's: its peer's endpoint names what to dial,
     * and a service must not be made to connect to any port a peer names), always the peer of one;
     * otherwise of two devices the one with the larger (address, port), on one device the QP with the
     * larger number.
     */
    private boolean initiates(QueuePairEndpoint peer) {
        if (passive) {
            return false;
        }
        if (peer.admissionToken().startsWith(NEVER_DIALS)) {
            return true;
        }
        SoftDevice.Listener l = device.listener();
        int c = Arrays.compareUnsigned(l.gid().bytes(), peer.gid().bytes());
        if (c == 0) {
            c = Integer.compare(l.port(), peer.lid());
        }
        if (c == 0) {
            c = Integer.compare(qpNumber, peer.qpNumber());
        }
        return c > 0;
    }

    /** Joins the peer QP over the link to its device (dialled now if there is none), bounded. */
    private void dial(QueuePairEndpoint peer) {
        String call = "ibv_modify_qp(RTR, QP " + qpNumber + ")";
        if (!peer.gid().isIpv4Mapped()) {
            throw new VerbsException(call, Errno.EINVAL, "the software provider reaches peers by IPv4 GID, not " + peer.gid());
        }
        InetSocketAddress address = new InetSocketAddress(peer.gid().ipv4Address(), peer.lid());
        for (int attempt = 0; attempt < 2; attempt++) { // a link closing as we join: one more, on a new link
            PeerLink l;
            try {
                l = device.linkTo(address);
            } catch (IOException e) {
                throw new VerbsException(call, Errno.ECONNREFUSED, "cannot reach peer " + address + ": " + e.getMessage());
            }
            synchronized (lock) {
                if (link != null) {
                    throw new VerbsException(call, Errno.EINVAL, "QP is already connected");
                }
                if (closing || state == QueuePairState.ERR) {
                    throw new VerbsException(call, Errno.EINVAL, "QP is in error or closed");
                }
            }
            if (l.attach(this, peer.qpNumber(), peer.admissionToken(), call)) {
                return;
            }
        }
        throw new VerbsException(call, Errno.ECONNREFUSED, "cannot reach peer " + address + ": the connection closed while joining");
    }

    /** A peer QP joined this one over {@code l} (its ATTACH carried our token); false if this QP cannot take it. */
    boolean acceptJoin(PeerLink l, int srcQpn) {
        synchronized (lock) {
            if (link != null || closing || state == QueuePairState.ERR) {
                return false;
            }
            if (remote != null && remote.qpNumber() != srcQpn) {
                return false;
            }
            startSendingOn(l, srcQpn);
            return true;
        }
    }

    /** The peer accepted our ATTACH (link reader); false if this QP failed meanwhile. */
    boolean joined(PeerLink l, int srcQpn) {
        synchronized (lock) {
            if (link != null || closing || state == QueuePairState.ERR) {
                return false;
            }
            startSendingOn(l, srcQpn);
            return true;
        }
    }

    /** Sends what was posted before the join, then makes the link visible to senders (so nothing overtakes it). */
    private void startSendingOn(PeerLink l, int srcQpn) {
        peerQpn = srcQpn;
        for (Frame f; (f = beforeJoin.pollFirst()) != null; ) {
            f.dstQpn = srcQpn;
            l.send(f);
        }
        link = l;
    }

    int peerQpn() {
        return peerQpn;
    }

    /** Whether the link may write into this QP's memory (not once it failed or closed). */
    @Override
    public boolean acceptsData() {
        return state != QueuePairState.ERR && !closing;
    }

    /** Sends a frame of this QP to its peer QP (queued until the QP joins its link). */
    void send(Frame f) {
        send(f, true);
    }

    /**
     * {@link #send(Frame)}; with {@code now} false the frame is only queued on the link, and the
     * caller calls {@link #flushLink} after the last frame of its chain. With {@code now} true the link
     * decides ({@link PeerLink#send(Frame)}: at once, or on its loop at the end of the turn).
     */
    void send(Frame f, boolean now) {
        f.srcQpn = qpNumber;
        PeerLink l = link;
        if (l == null) {
            synchronized (lock) {
                l = link;
                if (l == null) {
                    if (state != QueuePairState.ERR) {
                        beforeJoin.add(f);
                    }
                    return;
                }
            }
        }
        f.dstQpn = peerQpn;
        if (now) {
            l.send(f);
        } else {
            l.send(f, false);
        }
    }

    /** Writes what this QP's link has queued (after a chain sent with {@code now} false). */
    void flushLink() {
        PeerLink l = link;
        if (l != null) {
            l.flush();
        }
    }

    /** The peer QP failed or closed (DETACH). */
    void peerLeft(PeerLink l) {
        synchronized (lock) {
            if (link == l && !closing) {
                LOG.log(System.Logger.Level.DEBUG, "software QP " + qpNumber + ": peer QP " + peerQpn + " left");
                enterError(WorkCompletionStatus.RETRY_EXC_ERR, false);
            }
        }
    }

    /** The link closed under this QP: what an HCA reports when the peer stops answering. */
    void linkLost(PeerLink l, IOException cause) {
        synchronized (lock) {
            if (link == l && !closing) {
                LOG.log(System.Logger.Level.DEBUG, "software QP " + qpNumber + ": connection lost: " + cause.getMessage());
                enterError(WorkCompletionStatus.RETRY_EXC_ERR, false);
            }
        }
    }

    // ---------------------------------------------------------------- posting

    @Override
    public void postSend(SendWorkRequests requests, int count) {
        requester.postSend(requests, count);
    }

    /** As libibverbs' providers do: the checks of verbs.h's inline ibv_bind_mw, then a posted BIND_MW request. */
    @Override
    public int bindWindow(MemoryWindow window, MemoryRegion region, long address, long length, int windowAccess,
                          long wrId, int sendFlags) {
        if (!(window instanceof SoftMemoryWindow mw)) {
            throw new IllegalArgumentException("ibv_bind_mw: " + window + " is not a window of " + device.name());
        }
        ProviderSupport.checkWindowBind(qpNumber, mw, region, address, length,
                region instanceof SoftMemoryRegion r && r.pd == mw.pd);
        int newRkey = MemoryWindow.nextRkey(mw.rkey());
        try (SendWorkRequests one = SendWorkRequests.allocate(1, 1)) {
            one.get(0).reset().wrId(wrId).flags(sendFlags).bindWindow(mw, newRkey, region, address, length, windowAccess);
            requester.postSend(one, 1);
        }
        return newRkey;
    }

    /** The extended path's complete: every request valid, or none posted; returns the errno (0 = posted). */
    int postAllOrNothing(SendWorkRequests requests, int count) {
        return requester.postAllOrNothing(requests, count);
    }

    @Override
    public WorkRequestBuilder workRequestBuilder() {
        if (builder == null) {
            throw new IllegalStateException("QP " + qpNumber + " was created without send ops: use QueuePairConfig.withSendOps");
        }
        return builder;
    }

    @Override
    public void postReceive(ReceiveWorkRequests requests, int count) {
        responder.postReceive(requests, count);
    }

    /**
     * Moves to ERR (under {@link #lock}): the QP leaves its link (with {@code tellPeer}, the peer QP
     * is told), and once the link no longer touches its memory the oldest pending request completes
     * with {@code firstStatus} (when given), the rest and every receive on its own queue flush.
     */
    void enterError(WorkCompletionStatus firstStatus, boolean tellPeer) {
        if (state == QueuePairState.ERR) {
            return;
        }
        state = QueuePairState.ERR;
        beforeJoin.clear();
        PeerLink l = link;
        if (l != null) {
            l.leave(this, peerQpn, tellPeer);
        }
        requester.flush(firstStatus);
        responder.flush();
    }

    @Override
    public CompletionQueue sendCompletionQueue() {
        return sendCq;
    }

    @Override
    public CompletionQueue receiveCompletionQueue() {
        return recvCq;
    }

    @Override
    public SharedReceiveQueue sharedReceiveQueue() {
        return srq;
    }

    /**
     * Leaves the link (the peer QP is told) and returns once the link no longer touches this QP's
     * memory, within a bounded time whatever the peer does. Outstanding requests are not completed.
     */
    @Override
    public void close() {
        PeerLink l;
        synchronized (lock) {
            if (closing) {
                return;
            }
            closing = true;
            state = QueuePairState.ERR;
            requester.clear();
            beforeJoin.clear();
            l = link;
        }
        if (l != null) {
            l.leave(this, peerQpn, true);
        }
        if (builder != null) {
            builder.close();
        }
        if (srq != null) {
            srq.detach();
        }
        device.forget(this);
    }

    @Override
    public String toString() {
        return "QP " + qpNumber + " on " + device.name();
    }
}
