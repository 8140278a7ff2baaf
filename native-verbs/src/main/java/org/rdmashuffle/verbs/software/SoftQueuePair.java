package org.rdmashuffle.verbs.software;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.TimeUnit;

import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.Gid;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.PostException;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairAttributes;
import org.rdmashuffle.verbs.QueuePairCapabilities;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.QueuePairEndpoint;
import org.rdmashuffle.verbs.QueuePairState;
import org.rdmashuffle.verbs.ReceiveWorkRequests;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendOps;
import org.rdmashuffle.verbs.WorkRequestBuilder;
import org.rdmashuffle.verbs.SendWorkRequest;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.SharedReceiveQueue;
import org.rdmashuffle.verbs.VerbsException;
import org.rdmashuffle.verbs.WorkCompletionOpcode;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkCompletions;
import org.rdmashuffle.verbs.WorkRequestOpcode;

/**
 * An RC queue pair carried on one TCP connection. As requester it turns posted work requests into
 * request frames and completes them, in posting order, as responses come back; as responder it
 * serves the peer's reads, writes, sends and atomics against this device's registered memory,
 * checking key, bounds and access for every one. A remote error completes the failed request
 * with its status and moves the QP to ERR; the requests behind it are flushed, as on hardware.
 *
 * <p>Threads: a reader and a writer per connection, both daemons, ended by {@link #close()} or
 * by the connection dropping. Posting never blocks on the network: frames go to the writer's queue.
 */
final class SoftQueuePair implements QueuePair {
    private static final System.Logger LOG = System.getLogger(SoftQueuePair.class.getName());
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final long RNR_DELAY_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
    /** Connecting to a peer's data listener, and waiting for its verdict on our hello, each at most this long. */
    static final int DIAL_TIMEOUT_MILLIS = 10_000;
    private static final long READY_WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final SoftDevice device;
    private final SoftProtectionDomain pd;
    private final int qpNumber;
    private final int initialPsn = RANDOM.nextInt() & 0xFFFFFF;
    private final String token;
    private final QueuePairCapabilities capabilities;
    private final SoftCompletionQueue sendCq;
    private final SoftCompletionQueue recvCq;
    private final SoftSharedReceiveQueue srq;
    private final boolean signalAll;
    private final LinkedBlockingDeque<Receive> receives = new LinkedBlockingDeque<>();
    private final SoftWorkRequestBuilder builder;

    /** Guards the requester state: pending requests, sequence numbers and the state itself. */
    private final Object lock = new Object();
    private final ArrayDeque<PendingRequest> pending = new ArrayDeque<>();
    /** Answered requests, reused by the next posts. */
    private final ArrayDeque<PendingRequest> spare = new ArrayDeque<>();
    private long nextSequence;
    private volatile QueuePairState state = QueuePairState.RESET;
    private volatile boolean closing;

    private int portNumber;
    private int accessFlags;
    private QueuePairEndpoint remote;
    private ConnectOptions options;

    private final FrameWriter writer = new FrameWriter();
    /**
     * Held by the reader while it reads into application memory (the writer has its own, {@link
     * FrameWriter#writing}). Before error completions are delivered the connection is closed and both
     * are taken once: after a completion, the provider no longer touches that request's memory.
     */
    private final java.util.concurrent.locks.ReentrantLock reading = new java.util.concurrent.locks.ReentrantLock();
    private volatile SocketChannel channel;
    private Thread readerThread;
    private Thread writerThread;

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
        this.token = HexFormat.of().formatHex(secret);
        this.capabilities = new QueuePairCapabilities(config.maxSendWr(),
                config.sharedReceiveQueue() == null ? config.maxRecvWr() : 0, config.maxSendSge(),
                config.sharedReceiveQueue() == null ? config.maxRecvSge() : 0,
                Math.max(config.maxInlineData(), 0));
        this.sendCq = (SoftCompletionQueue) config.sendCompletionQueue();
        this.recvCq = (SoftCompletionQueue) config.receiveCompletionQueue();
        this.srq = (SoftSharedReceiveQueue) config.sharedReceiveQueue();
        this.signalAll = config.signalAll();
        if ((config.sendOps() & ~SendOps.ALL_BUILDER_OPS) != 0) {
            throw new VerbsException("ibv_create_qp_ex", Errno.EOPNOTSUPP, "RC QP with send ops "
                    + SendOps.describe(config.sendOps()) + " on " + device.name() + ": it supports "
                    + SendOps.describe(SendOps.ALL_BUILDER_OPS));
        }
        this.builder = config.sendOps() == 0 ? null : new SoftWorkRequestBuilder(this, config.sendOps(),
                config.maxSendWr(), config.maxSendSge(), Math.max(config.maxInlineData(), 0));
    }

    String issuedToken() {
        return token;
    }

    boolean isConnected() {
        SocketChannel c = channel;
        return c != null && c.isOpen();
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
            enterError(null);
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

    // ---------------------------------------------------------------- connection

    /** The side with the larger (address, port, QPN) dials; the other is dialled. */
    private boolean initiates(QueuePairEndpoint peer) {
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

    private void dial(QueuePairEndpoint peer) {
        String call = "ibv_modify_qp(RTR, QP " + qpNumber + ")";
        if (!peer.gid().isIpv4Mapped()) {
            throw new VerbsException(call, Errno.EINVAL, "the software provider reaches peers by IPv4 GID, not " + peer.gid());
        }
        InetSocketAddress address = new InetSocketAddress(peer.gid().ipv4Address(), peer.lid());
        SocketChannel ch = null;
        try {
            ch = SocketChannel.open();
            // Bounded: a peer's endpoint names the address, and a black hole must not hold this thread.
            ch.socket().connect(address, DIAL_TIMEOUT_MILLIS);
            ch.socket().setTcpNoDelay(true);
            ch.socket().setSoTimeout(DIAL_TIMEOUT_MILLIS);
            DataOutputStream out = new DataOutputStream(ch.socket().getOutputStream());
            byte[] secret = peer.admissionToken().getBytes(StandardCharsets.US_ASCII);
            out.writeInt(Frame.HELLO_MAGIC);
            out.writeInt(qpNumber);
            out.writeInt(peer.qpNumber());
            out.writeInt(secret.length);
            out.write(secret);
            out.flush();
            int verdict = new DataInputStream(ch.socket().getInputStream()).readInt();
            if (verdict != 0) {
                throw new VerbsException(call, Errno.ECONNREFUSED, "peer " + address + " refused the data connection for QP "
                        + peer.qpNumber() + " (wrong or expired admission token?)");
            }
            ch.socket().setSoTimeout(0);
            if (!attach(ch)) {
                throw new VerbsException(call, Errno.EINVAL, "QP is already connected");
            }
        } catch (IOException e) {
            closeQuietly(ch);
            throw new VerbsException(call, Errno.ECONNREFUSED, "cannot reach peer " + address + ": " + e.getMessage());
        } catch (RuntimeException e) {
            closeQuietly(ch);
            throw e;
        }
    }

    /** The listener hands over an admitted connection from the peer QP {@code peerQpn}. */
    boolean accept(SocketChannel ch, int peerQpn) {
        synchronized (lock) {
            if (remote != null && remote.qpNumber() != peerQpn) {
                return false;
            }
        }
        return attach(ch);
    }

    private boolean attach(SocketChannel ch) {
        synchronized (lock) {
            if (channel != null || closing || state == QueuePairState.ERR) {
                return false;
            }
            channel = ch;
            // Virtual threads: a queue pair's reader and writer block on its socket most of the time, and an
            // engine talking to a thousand peers must not hold two platform threads (and stacks) per QP.
            readerThread = Thread.ofVirtual().name("rdma-soft-qp" + qpNumber + "-reader").start(this::readLoop);
            writerThread = Thread.ofVirtual().name("rdma-soft-qp" + qpNumber + "-writer").start(this::writeLoop);
            return true;
        }
    }

    /** Sends queued frames until the QP closes ({@link FrameWriter}). */
    private void writeLoop() {
        try {
            writer.run(channel);
        } catch (IOException e) {
            connectionLost(e);
        } catch (IllegalStateException e) {
            // The memory a queued frame points at was freed (a region closed under a pending read).
            connectionLost(new IOException("frame memory no longer available: " + e.getMessage(), e));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void readLoop() {
        FrameReader in = new FrameReader(channel);
        Frame f = new Frame(); // one per reader, filled by each header it reads
        try {
            while (true) {
                if (!in.next(f)) {
                    connectionLost(new java.io.EOFException("peer closed the connection"));
                    return;
                }
                switch (f.type) {
                    case Frame.READ_RESPONSE, Frame.ACK, Frame.ATOMIC_RESPONSE -> onResponse(in, f);
                    case Frame.READ, Frame.WRITE, Frame.SEND, Frame.COMPARE_SWAP, Frame.FETCH_ADD, Frame.NOP ->
                            onRequest(in, f);
                    default -> throw new IOException("malformed frame: unknown type " + f.type);
                }
            }
        } catch (IOException e) {
            connectionLost(e);
        } catch (IllegalStateException e) {
            connectionLost(new IOException("target memory no longer available: " + e.getMessage(), e));
        } catch (RuntimeException e) { // a peer's frame this code did not foresee: the QP fails, the thread ends cleanly
            connectionLost(new IOException("malformed frame from the peer: " + e, e));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void connectionLost(IOException cause) {
        synchronized (lock) {
            if (closing || state == QueuePairState.ERR) {
                return;
            }
            LOG.log(System.Logger.Level.DEBUG, "software QP " + qpNumber + ": connection lost: " + cause.getMessage());
            // What an HCA reports when the peer stops answering: the oldest request exhausts its retries.
            enterError(WorkCompletionStatus.RETRY_EXC_ERR);
        }
    }

    private void send(Frame f) {
        writer.add(f);
    }

    // ---------------------------------------------------------------- requester

    @Override
    public void postSend(SendWorkRequests requests, int count) {
        if (count < 1 || count > requests.capacity()) {
            throw new IllegalArgumentException("cannot post " + count + " requests from a chain of " + requests.capacity());
        }
        synchronized (lock) {
            for (int i = 0; i < count; i++) {
                SendWorkRequest wr = requests.get(i);
                int errno = refusal(wr, pending.size());
                if (errno != 0) {
                    throw new PostException("ibv_post_send", errno, i, wr.wrId(), count);
                }
                post(wr);
            }
        }
    }

    /** The extended path's complete: every request valid, or none posted; returns the errno (0 = posted). */
    int postAllOrNothing(SendWorkRequests requests, int count) {
        synchronized (lock) {
            for (int i = 0; i < count; i++) {
                int errno = refusal(requests.get(i), pending.size() + i);
                if (errno != 0) {
                    return errno;
                }
            }
            for (int i = 0; i < count; i++) {
                post(requests.get(i));
            }
            return 0;
        }
    }

    /** Why a post of {@code wr} would be refused, as an errno; 0 when it is accepted. */
    private int refusal(SendWorkRequest wr, int outstanding) {
        WorkRequestOpcode op = WorkRequestOpcode.of(wr.opcodeCode());
        if (state == QueuePairState.RESET || state == QueuePairState.INIT || state == QueuePairState.RTR) {
            return Errno.EINVAL;
        } else if (op == null || wr.sgeCount() > capabilities.maxSendSge()) {
            return Errno.EINVAL;
        } else if (outstanding >= capabilities.maxSendWr()) {
            return Errno.ENOMEM;
        } else if ((wr.flags() & SendFlags.INLINE) != 0 && totalLength(wr) > capabilities.maxInlineData()) {
            return Errno.EINVAL;
        }
        return 0;
    }

    private void post(SendWorkRequest wr) {
        if (state == QueuePairState.ERR) {
            sendCq.push(wr.wrId(), WorkCompletionStatus.WR_FLUSH_ERR.code(), 0, 0, 0, qpNumber, 0, true);
        } else {
            issue(wr, WorkRequestOpcode.of(wr.opcodeCode()));
        }
    }

    @Override
    public WorkRequestBuilder workRequestBuilder() {
        if (builder == null) {
            throw new IllegalStateException("QP " + qpNumber + " was created without send ops: use QueuePairConfig.withSendOps");
        }
        return builder;
    }

    private static long totalLength(SendWorkRequest wr) {
        long total = 0;
        for (int s = 0; s < wr.sgeCount(); s++) {
            total += Integer.toUnsignedLong(wr.sgeLength(s));
        }
        return total;
    }

    /** Builds the frame for one request; local SGEs are checked here, as an HCA checks them when it executes. */
    private void issue(SendWorkRequest wr, WorkRequestOpcode op) {
        PendingRequest p = spare.isEmpty() ? new PendingRequest(capabilities.maxSendSge()) : spare.pop().clear();
        p.sequence = nextSequence++;
        p.wrId = wr.wrId();
        p.signaled = signalAll || (wr.flags() & SendFlags.SIGNALED) != 0;
        boolean inline = (wr.flags() & SendFlags.INLINE) != 0;
        boolean writesLocal = op == WorkRequestOpcode.RDMA_READ || op.isAtomic();
        boolean carriesData = op == WorkRequestOpcode.RDMA_WRITE || op == WorkRequestOpcode.RDMA_WRITE_WITH_IMM
                || op == WorkRequestOpcode.SEND || op == WorkRequestOpcode.SEND_WITH_IMM;
        ByteBuffer[] payload = carriesData ? new ByteBuffer[wr.sgeCount()] : null;
        long total = 0;
        for (int s = 0; s < wr.sgeCount(); s++) {
            long length = Integer.toUnsignedLong(wr.sgeLength(s));
            total += length;
            if (inline && !writesLocal) {
                // Inline: the bytes are copied now, from memory that need not be registered.
                byte[] copy = MemorySegment.ofAddress(wr.sgeAddress(s)).reinterpret(length).toArray(ValueLayout.JAVA_BYTE);
                payload[s] = ByteBuffer.wrap(copy);
                continue;
            }
            SoftMemoryRegion mr = pd.context.region(wr.sgeLkey(s), pd);
            long offset = mr == null ? -1 : mr.offsetOf(wr.sgeAddress(s), length);
            if (offset < 0 || (writesLocal && (mr.access() & Access.LOCAL_WRITE) == 0)) {
                p.localError = WorkCompletionStatus.LOC_PROT_ERR.code();
                break;
            }
            if (payload != null) {
                payload[s] = mr.segment().asSlice(offset, length).asByteBuffer();
            } else {
                p.addDestination(mr, offset, (int) length);
            }
        }
        if (total > Integer.MAX_VALUE) {
            p.localError = WorkCompletionStatus.LOC_LEN_ERR.code();
        }
        p.length = (int) total;
        Frame f = p.request;
        if (p.localError != 0) {
            f.reset(Frame.NOP, p.sequence);
            p.opcode = opcodeOf(op);
        } else {
            switch (op) {
                case RDMA_READ -> {
                    f.reset(Frame.READ, p.sequence);
                    f.address = wr.remoteAddress();
                    f.rkey = wr.rkey();
                    f.length = p.length;
                    p.opcode = WorkCompletionOpcode.RDMA_READ.code();
                }
                case RDMA_WRITE, RDMA_WRITE_WITH_IMM, SEND, SEND_WITH_IMM -> {
                    boolean isSend = op == WorkRequestOpcode.SEND || op == WorkRequestOpcode.SEND_WITH_IMM;
                    f.reset(isSend ? Frame.SEND : Frame.WRITE, p.sequence);
                    f.address = wr.remoteAddress();
                    f.rkey = wr.rkey();
                    f.length = p.length;
                    if (op.carriesImmediate()) {
                        f.flags |= Frame.FLAG_IMMEDIATE;
                        f.a = wr.immediate();
                    }
                    if ((wr.flags() & SendFlags.SOLICITED) != 0) {
                        f.flags |= Frame.FLAG_SOLICITED;
                    }
                    f.b = options == null ? 7 : options.rnrRetry();
                    f.payload = payload;
                    p.opcode = isSend ? WorkCompletionOpcode.SEND.code() : WorkCompletionOpcode.RDMA_WRITE.code();
                }
                case ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD -> {
                    f.reset(op == WorkRequestOpcode.ATOMIC_CMP_AND_SWP ? Frame.COMPARE_SWAP : Frame.FETCH_ADD, p.sequence);
                    f.address = wr.atomicRemoteAddress();
                    f.rkey = wr.atomicRkey();
                    f.length = 8;
                    f.a = wr.compareAdd();
                    f.b = wr.swap();
                    p.opcode = op == WorkRequestOpcode.ATOMIC_CMP_AND_SWP ? WorkCompletionOpcode.COMP_SWAP.code()
                            : WorkCompletionOpcode.FETCH_ADD.code();
                    if (p.destinations() != 1 || p.destinationLength(0) != 8) {
                        p.localError = WorkCompletionStatus.LOC_LEN_ERR.code();
                        f.reset(Frame.NOP, p.sequence);
                    }
                }
                default -> throw new AssertionError(op);
            }
        }
        pending.add(p);
        send(f);
    }

    private static int opcodeOf(WorkRequestOpcode op) {
        return switch (op) {
            case RDMA_READ -> WorkCompletionOpcode.RDMA_READ.code();
            case RDMA_WRITE, RDMA_WRITE_WITH_IMM -> WorkCompletionOpcode.RDMA_WRITE.code();
            case SEND, SEND_WITH_IMM -> WorkCompletionOpcode.SEND.code();
            case ATOMIC_CMP_AND_SWP -> WorkCompletionOpcode.COMP_SWAP.code();
            case ATOMIC_FETCH_AND_ADD -> WorkCompletionOpcode.FETCH_ADD.code();
        };
    }

    private void onResponse(FrameReader in, Frame f) throws IOException {
        PendingRequest p;
        synchronized (lock) {
            p = pending.peekFirst();
        }
        if (p == null || p.sequence != f.sequence) {
            throw new IOException("malformed response: sequence " + f.sequence + ", expected "
                    + (p == null ? "none" : p.sequence));
        }
        if (f.type != responseTo(p.opcode)) {
            // A responder answering a READ with an ACK (no data) or a SEND with read data: what an HCA
            // reports as a bad response. The request fails, the QP goes to ERR; nothing is written.
            synchronized (lock) {
                if (state != QueuePairState.ERR && pending.peekFirst() == p) {
                    LOG.log(System.Logger.Level.DEBUG, "software QP " + qpNumber + ": response type " + f.type
                            + " to request " + p.sequence + " (wc opcode " + p.opcode + ")");
                    enterError(WorkCompletionStatus.BAD_RESP_ERR);
                }
            }
            return;
        }
        int status = f.status;
        if (status == 0 && p.localError == 0) {
            if (f.type == Frame.READ_RESPONSE) {
                if (f.length != p.length) {
                    throw new IOException("malformed read response: " + f.length + " bytes for a read of " + p.length);
                }
                reading.lock();
                try {
                    if (state == QueuePairState.ERR) {
                        return; // flushed: its memory may already be gone
                    }
                    p.land(in);
                } finally {
                    reading.unlock();
                }
            } else if (f.type == Frame.ATOMIC_RESPONSE) {
                reading.lock();
                try {
                    if (state == QueuePairState.ERR) {
                        return;
                    }
                    p.landAtomic(f.a);
                } finally {
                    reading.unlock();
                }
            }
        }
        synchronized (lock) {
            if (state == QueuePairState.ERR || pending.peekFirst() != p) {
                return; // flushed meanwhile
            }
            pending.pollFirst();
            if (status == 0 && p.localError == 0) {
                if (p.signaled) {
                    sendCq.push(p.wrId, 0, p.opcode, p.length, 0, qpNumber, 0, false);
                }
                // Answered, so its frame was written: the next post may reuse both. (A peer answering
                // ahead of the request breaks only its own connection: the reused frame goes out twice,
                // the answers fall out of step, the QP fails.)
                spare.push(p.clear());
            } else {
                sendCq.push(p.wrId, p.localError != 0 ? p.localError : status, p.opcode, 0, 0, qpNumber, 0, true);
                enterError(null);
            }
        }
    }

    /** The frame type a request of this completion opcode is answered with. */
    private static byte responseTo(int wcOpcode) {
        if (wcOpcode == WorkCompletionOpcode.RDMA_READ.code()) {
            return Frame.READ_RESPONSE;
        }
        if (wcOpcode == WorkCompletionOpcode.COMP_SWAP.code() || wcOpcode == WorkCompletionOpcode.FETCH_ADD.code()) {
            return Frame.ATOMIC_RESPONSE;
        }
        return Frame.ACK;
    }

    /**
     * Moves to ERR: the oldest pending request completes with {@code firstStatus} (when given), the
     * rest and every receive on the QP's own queue flush, and the connection closes so the peer sees it.
     */
    private void enterError(WorkCompletionStatus firstStatus) {
        if (state == QueuePairState.ERR) {
            return;
        }
        state = QueuePairState.ERR;
        writer.clear();
        closeQuietly(channel);
        quiesce();
        boolean first = true;
        for (PendingRequest p; (p = pending.pollFirst()) != null; first = false) {
            int st = first && firstStatus != null ? firstStatus.code() : WorkCompletionStatus.WR_FLUSH_ERR.code();
            sendCq.push(p.wrId, st, p.opcode, 0, 0, qpNumber, 0, true);
        }
        for (Receive r; (r = receives.pollFirst()) != null; ) {
            recvCq.push(r.wrId(), WorkCompletionStatus.WR_FLUSH_ERR.code(), WorkCompletionOpcode.RECV.code(), 0, 0, qpNumber, 0, true);
        }
    }

    /** Waits until neither thread is inside a read or write of application memory (the channel is closed, so it is brief). */
    private void quiesce() {
        writer.writing.lock();
        writer.writing.unlock();
        reading.lock();
        reading.unlock();
    }

    // ---------------------------------------------------------------- responder

    private void onRequest(FrameReader in, Frame f) throws IOException, InterruptedException {
        awaitReadyToReceive();
        switch (f.type) {
            case Frame.READ -> {
                MemorySegment source = remoteSlice(f.rkey, f.address, f.length, Access.REMOTE_READ);
                if (source == null) {
                    send(Frame.response(Frame.READ_RESPONSE, f.sequence, WorkCompletionStatus.REM_ACCESS_ERR.code()));
                } else {
                    Frame r = Frame.response(Frame.READ_RESPONSE, f.sequence, 0);
                    r.length = f.length;
                    r.payload = new ByteBuffer[] {readPayload(f.rkey, source)};
                    send(r);
                }
            }
            case Frame.WRITE -> {
                boolean immediate = (f.flags & Frame.FLAG_IMMEDIATE) != 0;
                MemorySegment target = remoteSlice(f.rkey, f.address, f.length, Access.REMOTE_WRITE);
                Receive r = null;
                int status = 0;
                if (target == null) {
                    status = WorkCompletionStatus.REM_ACCESS_ERR.code();
                } else if (immediate && (r = takeReceive((int) f.b)) == null) {
                    status = WorkCompletionStatus.RNR_RETRY_EXC_ERR.code();
                }
                if (status != 0) {
                    in.discard(f.length);
                } else {
                    in.readInto(target.asByteBuffer());
                    if (r != null) {
                        recvCq.push(r.wrId(), 0, WorkCompletionOpcode.RECV_RDMA_WITH_IMM.code(), f.length, (int) f.a,
                                qpNumber, WorkCompletions.WITH_IMMEDIATE, (f.flags & Frame.FLAG_SOLICITED) != 0);
                    }
                }
                send(Frame.response(Frame.ACK, f.sequence, status));
            }
            case Frame.SEND -> {
                Receive r = takeReceive((int) f.b);
                int status = 0;
                if (r == null) {
                    status = WorkCompletionStatus.RNR_RETRY_EXC_ERR.code();
                    in.discard(f.length);
                } else if (f.length > r.capacity()) {
                    in.discard(f.length);
                    recvCq.push(r.wrId(), WorkCompletionStatus.LOC_LEN_ERR.code(), WorkCompletionOpcode.RECV.code(), 0, 0,
                            qpNumber, 0, true);
                    status = WorkCompletionStatus.REM_OP_ERR.code();
                } else {
                    in.readInto(r.buffers(f.length), f.length);
                    boolean immediate = (f.flags & Frame.FLAG_IMMEDIATE) != 0;
                    recvCq.push(r.wrId(), 0, WorkCompletionOpcode.RECV.code(), f.length, immediate ? (int) f.a : 0, qpNumber,
                            immediate ? WorkCompletions.WITH_IMMEDIATE : 0, (f.flags & Frame.FLAG_SOLICITED) != 0);
                }
                send(Frame.response(Frame.ACK, f.sequence, status));
            }
            case Frame.COMPARE_SWAP, Frame.FETCH_ADD -> {
                Frame r;
                MemorySegment target = (f.address & 7) == 0 ? remoteSlice(f.rkey, f.address, 8, Access.REMOTE_ATOMIC) : null;
                if (target == null) {
                    r = Frame.response(Frame.ATOMIC_RESPONSE, f.sequence, (f.address & 7) == 0
                            ? WorkCompletionStatus.REM_ACCESS_ERR.code() : WorkCompletionStatus.REM_INV_REQ_ERR.code());
                } else {
                    r = Frame.response(Frame.ATOMIC_RESPONSE, f.sequence, 0);
                    r.a = f.type == Frame.COMPARE_SWAP
                            ? (long) LONG.compareAndExchange(target, 0L, f.a, f.b)
                            : (long) LONG.getAndAdd(target, 0L, f.a);
                }
                send(r);
            }
            case Frame.NOP -> send(Frame.response(Frame.ACK, f.sequence, 0));
            default -> throw new IOException("malformed frame: unknown request type " + f.type);
        }
    }

    /** A request that arrives before this QP is RTR waits for it, as a retransmission would. */
    private void awaitReadyToReceive() throws InterruptedException, IOException {
        long deadline = System.nanoTime() + READY_WAIT_NANOS;
        while (state == QueuePairState.RESET || state == QueuePairState.INIT) {
            if (System.nanoTime() > deadline || closing) {
                throw new IOException("QP " + qpNumber + " never became ready to receive");
            }
            Thread.sleep(1);
        }
    }

    /**
     * The bytes of a read response. From a region peers cannot write (map outputs: REMOTE_READ
     * only), straight from the registered memory -- a file mapping -- with no copy. From a region
     * peers may write, a copy taken now: the response waits in the writer's queue, and a WRITE or
     * atomic that arrives after the READ must not change what the READ returns (RC ordering).
     */
    private ByteBuffer readPayload(int rkey, MemorySegment source) {
        SoftMemoryRegion mr = pd.context.region(rkey, pd);
        if (mr != null && (mr.access() & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) == 0) {
            return source.asByteBuffer();
        }
        return ByteBuffer.wrap(source.toArray(ValueLayout.JAVA_BYTE));
    }

    /** The registered memory a remote access names, if its key, bounds and access allow it; else null. */
    private MemorySegment remoteSlice(int rkey, long address, long length, int needed) {
        if ((accessFlags & needed) == 0) {
            return null;
        }
        SoftMemoryRegion mr = pd.context.region(rkey, pd);
        if (mr == null || (mr.access() & needed) == 0) {
            return null;
        }
        return mr.slice(address, length);
    }

    /**
     * The next posted receive (SRQ or own queue). With none posted the sender's RNR retries are
     * emulated by waiting: {@code rnrRetry} 7 means wait for as long as the QP lives.
     */
    private Receive takeReceive(int rnrRetry) throws InterruptedException {
        long wait = rnrRetry >= 7 ? Long.MAX_VALUE : (rnrRetry + 1L) * RNR_DELAY_NANOS;
        long deadline = wait == Long.MAX_VALUE ? Long.MAX_VALUE : System.nanoTime() + wait;
        while (!closing && state != QueuePairState.ERR) {
            long slice = Math.min(TimeUnit.MILLISECONDS.toNanos(100), Math.max(0, deadline - System.nanoTime()));
            Receive r = srq != null ? srq.take(slice) : receives.poll(slice, TimeUnit.NANOSECONDS);
            if (r != null || System.nanoTime() >= deadline) {
                return r;
            }
        }
        return null;
    }

    @Override
    public void postReceive(ReceiveWorkRequests requests, int count) {
        if (srq != null) {
            throw new IllegalStateException("QP " + qpNumber + " takes its receives from an SRQ: post them there");
        }
        if (count < 1 || count > requests.capacity()) {
            throw new IllegalArgumentException("cannot post " + count + " receives from a chain of " + requests.capacity());
        }
        synchronized (lock) {
            for (int i = 0; i < count; i++) {
                if (receives.size() >= capabilities.maxRecvWr()) {
                    throw new PostException("ibv_post_recv", Errno.ENOMEM, i, requests.wrIdAt(i), count);
                }
                Receive r = pd.context.receive(requests, i, capabilities.maxRecvSge(), "ibv_post_recv", count);
                if (state == QueuePairState.ERR) {
                    recvCq.push(r.wrId(), WorkCompletionStatus.WR_FLUSH_ERR.code(), WorkCompletionOpcode.RECV.code(), 0, 0,
                            qpNumber, 0, true);
                } else {
                    receives.add(r);
                }
            }
        }
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

    /** Drops the connection and ends both threads within a bounded time, whatever the peer does. */
    @Override
    public void close() {
        Thread r;
        Thread w;
        synchronized (lock) {
            if (closing) {
                return;
            }
            closing = true;
            state = QueuePairState.ERR;
            pending.clear();
            r = readerThread;
            w = writerThread;
        }
        writer.stop();
        closeQuietly(channel);
        join(r);
        join(w);
        if (builder != null) {
            builder.close();
        }
        device.forget(this);
    }

    private static void join(Thread t) {
        if (t == null || t == Thread.currentThread()) {
            return;
        }
        try {
            t.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void closeQuietly(SocketChannel ch) {
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // already failing
            }
        }
    }

    @Override
    public String toString() {
        return "QP " + qpNumber + " on " + device.name();
    }
}
