package org.rdmashuffle.verbs.software;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;

import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.PostException;
import org.rdmashuffle.verbs.QueuePairState;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequest;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletionOpcode;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkRequestOpcode;

/**
 * A QP's send side: turns posted work requests into request frames (checking SGEs, keys and
 * access as an HCA does when it executes them), keeps them in posting order and completes them as
 * responses come back. An RNR NAK sends the refused request and every later one again after a
 * delay, up to the QP's {@code rnr_retry} (7: for as long as the QP lives), as hardware does.
 *
 * <p>State is guarded by the QP's lock; responses arrive on the link's loop.
 */
final class Requester {
    private static final long RNR_DELAY_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
    /** A peer QP not yet ready to receive is asked again this often, for at most {@link #READY_WAIT_NANOS}. */
    private static final long NOT_READY_DELAY_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long READY_WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final SoftQueuePair qp;
    private final ArrayDeque<PendingRequest> pending = new ArrayDeque<>();
    /** Answered requests, reused by the next posts. */
    private final ArrayDeque<PendingRequest> spare = new ArrayDeque<>();
    private long nextSequence;
    private boolean resendScheduled;
    /** RNR NAKs the oldest request has had, and since when its peer has said it is not ready. */
    private int rnrNaks;
    private long notReadySince;
    /** The request whose (successful) read response is landing: the loop lands one response at a time. */
    private PendingRequest landing;
    private final Landing.Done answerLanded = new Landing.Done() {
        @Override
        public void landed() {
            PendingRequest p = landing;
            landing = null;
            complete(p, 0);
        }

        @Override
        public void dropped() {
            landing = null; // flushed meanwhile: its memory may already be gone
        }
    };

    Requester(SoftQueuePair qp) {
        this.qp = qp;
    }

    void postSend(SendWorkRequests requests, int count) {
        if (count < 1 || count > requests.capacity()) {
            throw new IllegalArgumentException("cannot post " + count + " requests from a chain of " + requests.capacity());
        }
        try {
            synchronized (qp.lock) {
                for (int i = 0; i < count; i++) {
                    SendWorkRequest wr = requests.get(i);
                    int errno = refusal(wr, pending.size());
                    if (errno != 0) {
                        throw new PostException("ibv_post_send", errno, i, wr.wrId(), count);
                    }
                    post(wr);
                }
            }
        } finally {
            qp.flushLink(); // the chain's frames in one write (those posted before a refusal too)
        }
    }

    /** The extended path's complete: every request valid, or none posted; returns the errno (0 = posted). */
    int postAllOrNothing(SendWorkRequests requests, int count) {
        synchronized (qp.lock) {
            for (int i = 0; i < count; i++) {
                int errno = refusal(requests.get(i), pending.size() + i);
                if (errno != 0) {
                    return errno;
                }
            }
            for (int i = 0; i < count; i++) {
                post(requests.get(i));
            }
        }
        qp.flushLink();
        return 0;
    }

    /** Why a post of {@code wr} would be refused, as an errno; 0 when it is accepted. */
    private int refusal(SendWorkRequest wr, int outstanding) {
        WorkRequestOpcode op = WorkRequestOpcode.of(wr.opcodeCode());
        QueuePairState state = qp.state;
        if (state == QueuePairState.RESET || state == QueuePairState.INIT || state == QueuePairState.RTR) {
            return Errno.EINVAL;
        } else if (op == null || op == WorkRequestOpcode.FLUSH || op == WorkRequestOpcode.ATOMIC_WRITE || wr.sgeCount() > qp.capabilities.maxSendSge()) {
            return Errno.EINVAL;
        } else if (op.isLocal() && (wr.sgeCount() != 0 || (wr.flags() & SendFlags.INLINE) != 0)) {
            return Errno.EINVAL; // a bind or invalidation carries no data (rxe's validate_send_wr)
        } else if (outstanding >= qp.capabilities.maxSendWr()) {
            return Errno.ENOMEM;
        } else if ((wr.flags() & SendFlags.INLINE) != 0 && totalLength(wr) > qp.capabilities.maxInlineData()) {
            return Errno.EINVAL;
        }
        return 0;
    }

    private void post(SendWorkRequest wr) {
        if (qp.state == QueuePairState.ERR) {
            qp.sendCq.push(wr.wrId(), WorkCompletionStatus.WR_FLUSH_ERR.code(), 0, 0, 0, qp.qpNumber(), 0, true);
        } else {
            issue(wr, WorkRequestOpcode.of(wr.opcodeCode()));
        }
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
        PendingRequest p = spare.isEmpty() ? new PendingRequest(qp.capabilities.maxSendSge()) : spare.pop().clear();
        p.sequence = nextSequence++;
        p.wrId = wr.wrId();
        p.signaled = qp.signalAll || (wr.flags() & SendFlags.SIGNALED) != 0;
        boolean inline = (wr.flags() & SendFlags.INLINE) != 0;
        boolean writesLocal = op == WorkRequestOpcode.RDMA_READ || op.isAtomic();
        boolean carriesData = op == WorkRequestOpcode.RDMA_WRITE || op == WorkRequestOpcode.RDMA_WRITE_WITH_IMM
                || op == WorkRequestOpcode.SEND || op == WorkRequestOpcode.SEND_WITH_IMM || op == WorkRequestOpcode.SEND_WITH_INV;
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
            SoftMemoryRegion mr = qp.pd.context.region(wr.sgeLkey(s), qp.pd);
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
        if (p.localError == 0 && op.isLocal()) {
            // Binds and invalidations act on this device when executed -- here, in posting order --
            // and complete in order with the rest: a NOP keeps their place in the queue.
            p.localError = op == WorkRequestOpcode.BIND_MW ? bind(wr) : localInvalidate(wr.invalidateRkey());
            p.opcode = opcodeOf(op);
            p.length = 0;
            f.reset(Frame.NOP, p.sequence);
        } else if (p.localError != 0) {
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
                case RDMA_WRITE, RDMA_WRITE_WITH_IMM, SEND, SEND_WITH_IMM, SEND_WITH_INV -> {
                    boolean isSend = op == WorkRequestOpcode.SEND || op == WorkRequestOpcode.SEND_WITH_IMM
                            || op == WorkRequestOpcode.SEND_WITH_INV;
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
                    if (op == WorkRequestOpcode.SEND_WITH_INV) {
                        f.flags |= Frame.FLAG_INVALIDATE;
                        f.rkey = wr.invalidateRkey();
                    }
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
        qp.send(f, false); // written with the rest of its chain
    }

    private static int opcodeOf(WorkRequestOpcode op) {
        return switch (op) {
            case RDMA_READ -> WorkCompletionOpcode.RDMA_READ.code();
            case RDMA_WRITE, RDMA_WRITE_WITH_IMM -> WorkCompletionOpcode.RDMA_WRITE.code();
            case SEND, SEND_WITH_IMM, SEND_WITH_INV -> WorkCompletionOpcode.SEND.code();
            case ATOMIC_CMP_AND_SWP -> WorkCompletionOpcode.COMP_SWAP.code();
            case ATOMIC_FETCH_AND_ADD -> WorkCompletionOpcode.FETCH_ADD.code();
            case BIND_MW -> WorkCompletionOpcode.BIND_MW.code();
            case LOCAL_INV -> WorkCompletionOpcode.LOCAL_INV.code();
            case FLUSH -> WorkCompletionOpcode.FLUSH.code();
            case ATOMIC_WRITE -> WorkCompletionOpcode.ATOMIC_WRITE.code();
        };
    }

    /** Executes a BIND_MW; returns 0 or the status it completes with (a window or region not of this PD: a bind error). */
    private int bind(SendWorkRequest wr) {
        SoftMemoryWindow mw = qp.pd.context.windowByHandle(wr.bindWindowHandle(), qp.pd);
        long regionHandle = wr.bindRegionHandle();
        SoftMemoryRegion mr = regionHandle == 0 ? null : qp.pd.context.region((int) regionHandle, qp.pd);
        if (mw == null || (regionHandle != 0 && (mr == null || regionHandle >>> 32 != 0))) {
            return WorkCompletionStatus.MW_BIND_ERR.code();
        }
        return mw.bind(qp, wr.bindNewRkey(), mr, wr.bindAddress(), wr.bindLength(), wr.bindAccess());
    }

    /** Executes a LOCAL_INV: a valid type 2 window of this PD, or the request fails (rxe: a local QP operation error). */
    private int localInvalidate(int rkey) {
        SoftMemoryWindow mw = qp.pd.context.window(rkey, qp.pd);
        return mw != null && mw.invalidate(rkey, qp, false) ? 0 : WorkCompletionStatus.LOC_QP_OP_ERR.code();
    }

    // ---------------------------------------------------------------- responses (link loop)

    /** Takes a response whose header just arrived; returns where its payload goes (null: it has none). */
    Landing onResponse(PeerLink link, Frame f) throws IOException {
        PendingRequest p;
        boolean flushed;
        synchronized (qp.lock) {
            flushed = qp.state == QueuePairState.ERR;
            p = flushed ? null : pending.peekFirst();
            if (!flushed && (p == null || p.sequence != f.sequence)) {
                throw new IOException("malformed response: sequence " + f.sequence + ", expected "
                        + (p == null ? "none" : p.sequence) + " (QP " + qp.qpNumber() + ")");
            }
            if (!flushed && f.type == Frame.RNR_NAK) {
                onReceiverNotReady(p, f.status);
                return null;
            }
        }
        if (flushed) {
            return link.skip(f.payloadLength()); // the QP failed and is leaving the link: its answers are skipped
        }
        if (f.type != expectedResponse(p)) {
            // A responder answering a READ with an ACK (no data) or a SEND with read data: what an HCA
            // reports as a bad response. The request fails, the QP goes to ERR; nothing is written.
            synchronized (qp.lock) {
                if (qp.state != QueuePairState.ERR && pending.peekFirst() == p) {
                    qp.enterError(WorkCompletionStatus.BAD_RESP_ERR, true);
                }
            }
            return link.skip(f.payloadLength());
        }
        int status = f.status;
        if (status == 0 && p.localError == 0) {
            if (f.type == Frame.READ_RESPONSE) {
                if (f.length != p.length) {
                    throw new IOException("malformed read response: " + f.length + " bytes for a read of " + p.length);
                }
                landing = p;
                return p.addDestinationsTo(link.landing().into(qp, answerLanded));
            } else if (f.type == Frame.ATOMIC_RESPONSE) {
                long old = f.a;
                if (!link.landUnless(qp, () -> p.landAtomic(old))) {
                    return null;
                }
            }
        }
        complete(p, status);
        return null;
    }

    /** Completes the oldest request, answered with {@code status}, unless it was flushed meanwhile. */
    private void complete(PendingRequest p, int status) {
        synchronized (qp.lock) {
            if (qp.state == QueuePairState.ERR || pending.peekFirst() != p) {
                return; // flushed meanwhile
            }
            pending.pollFirst();
            rnrNaks = 0;
            notReadySince = 0;
            if (status == 0 && p.localError == 0) {
                if (p.signaled) {
                    qp.sendCq.push(p.wrId, 0, p.opcode, p.length, 0, qp.qpNumber(), 0, false);
                }
                // Answered, so its frame was written: the next post may reuse both. (A peer answering
                // ahead of the request breaks only its own QP: the reused frame goes out twice,
                // the answers fall out of step, the QP fails.)
                spare.push(p.clear());
            } else {
                qp.sendCq.push(p.wrId, p.localError != 0 ? p.localError : status, p.opcode, 0, 0, qp.qpNumber(), 0, true);
                qp.enterError(null, true);
            }
        }
    }

    /** The frame type a request is answered with (a locally failed one went out as a NOP: an ACK). */
    private static byte expectedResponse(PendingRequest p) {
        if (p.localError != 0) {
            return Frame.ACK;
        }
        if (p.opcode == WorkCompletionOpcode.RDMA_READ.code()) {
            return Frame.READ_RESPONSE;
        }
        if (p.opcode == WorkCompletionOpcode.COMP_SWAP.code() || p.opcode == WorkCompletionOpcode.FETCH_ADD.code()) {
            return Frame.ATOMIC_RESPONSE;
        }
        return Frame.ACK;
    }

    /** The peer dropped {@code p} (the oldest) and what followed it: send them again later, or give up. */
    private void onReceiverNotReady(PendingRequest p, int reason) {
        long now = System.nanoTime();
        long delay;
        if (reason == Frame.NAK_NOT_READY) {
            if (notReadySince == 0) {
                notReadySince = now;
            } else if (now - notReadySince > READY_WAIT_NANOS) {
                qp.enterError(WorkCompletionStatus.RETRY_EXC_ERR, true); // the peer QP never became ready
                return;
            }
            delay = NOT_READY_DELAY_NANOS;
        } else {
            rnrNaks++;
            int rnrRetry = qp.rnrRetry();
            if (rnrRetry < 7 && rnrNaks > rnrRetry) {
                qp.enterError(WorkCompletionStatus.RNR_RETRY_EXC_ERR, true);
                return;
            }
            delay = RNR_DELAY_NANOS;
        }
        if (!resendScheduled) {
            resendScheduled = true;
            Thread.ofVirtual().name("rdma-soft-qp" + qp.qpNumber() + "-resend").start(() -> {
                try {
                    TimeUnit.NANOSECONDS.sleep(delay);
                } catch (InterruptedException e) {
                    return;
                }
                resend();
            });
        }
    }

    /** Sends every outstanding request again, oldest first (go-back-N from the NAK'd one). */
    private void resend() {
        synchronized (qp.lock) {
            resendScheduled = false;
            if (qp.state == QueuePairState.ERR) {
                return;
            }
            for (PendingRequest p : pending) {
                qp.send(p.request.copyForResend(), false);
            }
        }
        qp.flushLink();
    }

    /**
     * Completes every outstanding request in error (under the QP's lock, once its link no longer
     * touches their memory): the oldest with {@code firstStatus} when given, the rest flushed.
     */
    void flush(WorkCompletionStatus firstStatus) {
        boolean first = true;
        for (PendingRequest p; (p = pending.pollFirst()) != null; first = false) {
            int st = first && firstStatus != null ? firstStatus.code() : WorkCompletionStatus.WR_FLUSH_ERR.code();
            qp.sendCq.push(p.wrId, st, p.opcode, 0, 0, qp.qpNumber(), 0, true);
        }
    }

    /** Forgets every outstanding request without completing it (the QP is destroyed). */
    void clear() {
        pending.clear();
    }
}
