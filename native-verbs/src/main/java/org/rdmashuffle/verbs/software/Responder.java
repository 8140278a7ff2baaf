package org.rdmashuffle.verbs.software;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.concurrent.LinkedBlockingDeque;

import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.PostException;
import org.rdmashuffle.verbs.QueuePairState;
import org.rdmashuffle.verbs.ReceiveWorkRequests;
import org.rdmashuffle.verbs.WorkCompletionOpcode;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkCompletions;

/**
 * A QP's receive side: serves the peer's reads, writes, sends and atomics against this device's
 * registered memory, checking key, bounds and access for every one, and matches SENDs to posted
 * receives (the SRQ's or the QP's own). It never waits: a SEND with no receive posted, or a request
 * before the QP is ready to receive, is answered with an RNR NAK, and the QP's later requests are
 * dropped until the requester sends that one again (go-back-N, as hardware does with PSNs).
 *
 * <p>Runs on the link's loop (each request's header, then what follows its payload); receives
 * are posted from any thread.
 */
final class Responder {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final SoftQueuePair qp;
    private final SoftSharedReceiveQueue srq;
    private final LinkedBlockingDeque<Receive> receives = new LinkedBlockingDeque<>();
    /** After an RNR NAK: requests are dropped until the NAK'd one ({@link #awaitedSequence}) comes again. */
    private boolean awaitingResend;
    private long awaitedSequence;

    Responder(SoftQueuePair qp, SoftSharedReceiveQueue srq) {
        this.qp = qp;
        this.srq = srq;
    }

    /** Serves a request whose header just arrived; returns where its payload goes (null: it has none). */
    Landing onRequest(PeerLink link, Frame f) throws IOException {
        if (awaitingResend) {
            if (f.sequence != awaitedSequence) {
                return link.skip(f.payloadLength()); // sent before the requester learnt of the NAK: it comes again
            }
            awaitingResend = false;
        }
        QueuePairState state = qp.state;
        if (state == QueuePairState.RESET || state == QueuePairState.INIT) {
            return refuseForNow(link, f, Frame.NAK_NOT_READY);
        }
        switch (f.type) {
            case Frame.READ -> {
                SoftMemoryRegion mr = allowedRegion(f.rkey, f.address, f.length, Access.REMOTE_READ);
                MemorySegment source = mr == null ? null : mr.slice(f.address, f.length);
                if (source == null) {
                    qp.send(Frame.response(Frame.READ_RESPONSE, f.sequence, WorkCompletionStatus.REM_ACCESS_ERR.code()));
                } else {
                    Frame r = Frame.response(Frame.READ_RESPONSE, f.sequence, 0);
                    r.length = f.length;
                    r.payload = new ByteBuffer[] {readPayload(mr, source)};
                    if (mr.file() != null) {
                        r.file = mr.file();
                        r.filePosition = mr.filePositionOf(f.address);
                    }
                    qp.send(r);
                }
            }
            case Frame.WRITE -> {
                return onWrite(link, f);
            }
            case Frame.SEND -> {
                return onSend(link, f);
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
                qp.send(r);
            }
            case Frame.NOP -> qp.send(Frame.response(Frame.ACK, f.sequence, 0));
            default -> throw new IOException("malformed frame: unknown request type " + f.type);
        }
        return null;
    }

    private Landing onWrite(PeerLink link, Frame f) {
        boolean immediate = (f.flags & Frame.FLAG_IMMEDIATE) != 0;
        MemorySegment target = remoteSlice(f.rkey, f.address, f.length, Access.REMOTE_WRITE);
        if (target == null) {
            qp.send(Frame.response(Frame.ACK, f.sequence, WorkCompletionStatus.REM_ACCESS_ERR.code()));
            return link.skip(f.length);
        }
        Receive r = null;
        if (immediate && (r = nextReceive()) == null) {
            return refuseForNow(link, f, Frame.NAK_NO_RECEIVE);
        }
        Receive taken = r;
        long sequence = f.sequence;
        int length = f.length;
        int imm = (int) f.a;
        boolean solicited = (f.flags & Frame.FLAG_SOLICITED) != 0;
        Runnable complete = taken == null ? null : () -> qp.recvCq.push(taken.wrId(), 0,
                WorkCompletionOpcode.RECV_RDMA_WITH_IMM.code(), length, imm, qp.qpNumber(), WorkCompletions.WITH_IMMEDIATE, solicited);
        return link.landing().into(qp, thenCompleteAndAck(link, taken, complete, sequence)).add(target, 0, length);
    }

    private Landing onSend(PeerLink link, Frame f) {
        boolean invalidates = (f.flags & Frame.FLAG_INVALIDATE) != 0;
        SoftMemoryWindow invalidated = invalidates ? qp.pd.context.window(f.rkey, qp.pd) : null;
        if (invalidates && invalidated == null) {
            // Not a window of this PD: an invalid request, answered before a receive is taken (rxe: class J).
            qp.send(Frame.response(Frame.ACK, f.sequence, WorkCompletionStatus.REM_INV_REQ_ERR.code()));
            return link.skip(f.length);
        }
        Receive r = nextReceive();
        if (r == null) {
            return refuseForNow(link, f, Frame.NAK_NO_RECEIVE);
        }
        if (invalidates && !invalidated.invalidate(f.rkey, qp, true)) {
            // Type 1, not bound, or bound to another QP: the receive it took completes in error.
            qp.recvCq.push(r.wrId(), WorkCompletionStatus.REM_INV_REQ_ERR.code(), WorkCompletionOpcode.RECV.code(), 0, 0,
                    qp.qpNumber(), 0, true);
            qp.send(Frame.response(Frame.ACK, f.sequence, WorkCompletionStatus.REM_INV_REQ_ERR.code()));
            return link.skip(f.length);
        }
        if (f.length > r.capacity()) {
            qp.recvCq.push(r.wrId(), WorkCompletionStatus.LOC_LEN_ERR.code(), WorkCompletionOpcode.RECV.code(), 0, 0,
                    qp.qpNumber(), 0, true);
            qp.send(Frame.response(Frame.ACK, f.sequence, WorkCompletionStatus.REM_OP_ERR.code()));
            return link.skip(f.length);
        }
        long sequence = f.sequence;
        int length = f.length;
        boolean immediate = (f.flags & Frame.FLAG_IMMEDIATE) != 0;
        int imm = immediate ? (int) f.a : invalidates ? f.rkey : 0;
        int wcFlags = immediate ? WorkCompletions.WITH_IMMEDIATE : invalidates ? WorkCompletions.WITH_INVALIDATE : 0;
        boolean solicited = (f.flags & Frame.FLAG_SOLICITED) != 0;
        Landing l = link.landing().into(qp, thenCompleteAndAck(link, r, () -> qp.recvCq.push(r.wrId(), 0,
                WorkCompletionOpcode.RECV.code(), length, imm, qp.qpNumber(), wcFlags, solicited), sequence));
        long left = length;
        for (MemorySegment sge : r.sges()) {
            long take = Math.min(left, sge.byteSize());
            l.add(sge, 0, take);
            left -= take;
        }
        return l;
    }

    /**
     * What follows a WRITE's or SEND's payload: {@code complete} pushes the receive completion of
     * {@code taken} (none for a WRITE without immediate), unless the QP failed meanwhile (its leave
     * waits for this), in which case {@code taken} flushes; then the ACK.
     */
    private Landing.Done thenCompleteAndAck(PeerLink link, Receive taken, Runnable complete, long sequence) {
        return new Landing.Done() {
            @Override
            public void landed() {
                if (taken != null && !link.landUnless(qp, complete)) {
                    flushTaken(taken);
                    return;
                }
                qp.send(Frame.response(Frame.ACK, sequence, 0));
            }

            @Override
            public void dropped() {
                flushTaken(taken);
            }
        };
    }

    /** The QP failed while a request's bytes came: they were skipped, and the receive it took flushes. */
    private void flushTaken(Receive taken) {
        if (taken != null) {
            qp.recvCq.push(taken.wrId(), WorkCompletionStatus.WR_FLUSH_ERR.code(), WorkCompletionOpcode.RECV.code(), 0, 0,
                    qp.qpNumber(), 0, true);
        }
    }

    /** Drops {@code f} and everything the QP sends after it, and says so (the requester sends them again). */
    private Landing refuseForNow(PeerLink link, Frame f, int reason) {
        awaitingResend = true;
        awaitedSequence = f.sequence;
        qp.send(Frame.response(Frame.RNR_NAK, f.sequence, reason));
        return link.skip(f.payloadLength());
    }

    /**
     * The bytes of a read response. From a region peers cannot write (map outputs: REMOTE_READ
     * only), straight from the registered memory -- a file mapping -- with no copy. From a region
     * peers may write, a copy taken now: the response waits in the writer's queue, and a WRITE or
     * atomic that arrives after the READ must not change what the READ returns (RC ordering).
     */
    private static ByteBuffer readPayload(SoftMemoryRegion mr, MemorySegment source) {
        if (mr != null && (mr.access() & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) == 0) {
            return source.asByteBuffer();
        }
        return ByteBuffer.wrap(source.toArray(ValueLayout.JAVA_BYTE));
    }

    /** The registered memory a remote access names, if its key, bounds and access allow it; else null. */
    private MemorySegment remoteSlice(int rkey, long address, long length, int needed) {
        SoftMemoryRegion mr = allowedRegion(rkey, address, length, needed);
        return mr == null ? null : mr.slice(address, length);
    }

    /**
     * The region a remote access reaches, if the QP and the key allow {@code needed}; else null. The
     * key is a region's or a window's ({@link WindowKeys#isWindowKey}); a window checks its own range,
     * access and (type 2) that the access came on the QP it is bound to. The region's own bounds are
     * {@link SoftMemoryRegion#slice}'s.
     */
    private SoftMemoryRegion allowedRegion(int rkey, long address, long length, int needed) {
        if ((qp.accessFlags() & needed) == 0) {
            return null;
        }
        if (WindowKeys.isWindowKey(rkey)) {
            SoftMemoryWindow mw = qp.pd.context.window(rkey, qp.pd);
            return mw == null ? null : mw.regionFor(rkey, qp, address, length, needed);
        }
        SoftMemoryRegion mr = qp.pd.context.region(rkey, qp.pd);
        return mr == null || (mr.access() & needed) == 0 ? null : mr;
    }

    /** The next posted receive (SRQ or own queue), or null when none is posted. */
    private Receive nextReceive() {
        try {
            return srq != null ? srq.take(0) : receives.poll();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    void postReceive(ReceiveWorkRequests requests, int count) {
        if (srq != null) {
            throw new IllegalStateException("QP " + qp.qpNumber() + " takes its receives from an SRQ: post them there");
        }
        if (count < 1 || count > requests.capacity()) {
            throw new IllegalArgumentException("cannot post " + count + " receives from a chain of " + requests.capacity());
        }
        synchronized (qp.lock) {
            for (int i = 0; i < count; i++) {
                if (receives.size() >= qp.capabilities.maxRecvWr()) {
                    throw new PostException("ibv_post_recv", Errno.ENOMEM, i, requests.wrIdAt(i), count);
                }
                Receive r = qp.pd.context.receive(requests, i, qp.capabilities.maxRecvSge(), "ibv_post_recv", count);
                if (qp.state == QueuePairState.ERR) {
                    qp.recvCq.push(r.wrId(), WorkCompletionStatus.WR_FLUSH_ERR.code(), WorkCompletionOpcode.RECV.code(), 0, 0,
                            qp.qpNumber(), 0, true);
                } else {
                    receives.add(r);
                }
            }
        }
    }

    /** Flushes every receive on the QP's own queue (under the QP's lock, once the link no longer fills them). */
    void flush() {
        for (Receive r; (r = receives.pollFirst()) != null; ) {
            qp.recvCq.push(r.wrId(), WorkCompletionStatus.WR_FLUSH_ERR.code(), WorkCompletionOpcode.RECV.code(), 0, 0,
                    qp.qpNumber(), 0, true);
        }
    }
}
