package org.rdmashuffle.verbs.ibverbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.security.SecureRandom;
import java.util.concurrent.atomic.AtomicBoolean;

import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.Gid;
import org.rdmashuffle.verbs.GidEntry;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.PortAttributes;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairAttributes;
import org.rdmashuffle.verbs.QueuePairCapabilities;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.QueuePairEndpoint;
import org.rdmashuffle.verbs.QueuePairState;
import org.rdmashuffle.verbs.ReceiveWorkRequests;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.SharedReceiveQueue;
import org.rdmashuffle.verbs.VerbsException;
import org.rdmashuffle.verbs.WorkRequestBuilder;
import org.rdmashuffle.verbs.SendOps;
import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.MemoryWindow;
import org.rdmashuffle.verbs.ProviderSupport;
import org.rdmashuffle.verbs.PostException;
import org.rdmashuffle.verbs.SendWorkRequest;
import org.rdmashuffle.verbs.WorkRequestOpcode;
import org.rdmashuffle.verbs.ffi.ibv_mw_bind_info;
import org.rdmashuffle.verbs.ffi.Verbs;
import org.rdmashuffle.verbs.ffi.ibv_ah_attr;
import org.rdmashuffle.verbs.ffi.ibv_global_route;
import org.rdmashuffle.verbs.ffi.ibv_qp;
import org.rdmashuffle.verbs.ffi.ibv_qp_attr;
import org.rdmashuffle.verbs.ffi.ibv_qp_cap;
import org.rdmashuffle.verbs.ffi.ibv_qp_init_attr;
import org.rdmashuffle.verbs.ffi.ibv_qp_init_attr_ex;
import org.rdmashuffle.verbs.ffi.verbs_context;

/**
 * {@code struct ibv_qp *} of type RC. Sends and receives are posted through
 * {@code ibv_context.ops.post_send} / {@code post_recv} from chains built once in native memory.
 */
final class IbvQueuePair implements QueuePair {
    private static final SecureRandom PSN = new SecureRandom();

    private final IbvContext context;
    final MemorySegment qp;
    private final int qpNumber;
    private final int initialPsn;
    private final QueuePairCapabilities capabilities;
    private final CompletionQueue sendCq;
    private final CompletionQueue recvCq;
    private final SharedReceiveQueue srq;
    private final MemorySegment postSendFn;
    private final MemorySegment postRecvFn;
    private final IbvWorkRequestBuilder builder;
    /** struct ibv_mw_bind { uint64_t wr_id; unsigned int send_flags; struct ibv_mw_bind_info bind_info; }. */
    private static final java.lang.foreign.StructLayout MW_BIND = java.lang.foreign.MemoryLayout.structLayout(
            ValueLayout.JAVA_LONG.withName("wr_id"), ValueLayout.JAVA_INT.withName("send_flags"),
            java.lang.foreign.MemoryLayout.paddingLayout(4), ibv_mw_bind_info.layout().withName("bind_info"));
    private static final long MW_BIND_INFO = MW_BIND.byteOffset(java.lang.foreign.MemoryLayout.PathElement.groupElement("bind_info"));
    private final AtomicBoolean closed = new AtomicBoolean();

    private IbvQueuePair(IbvContext context, MemorySegment qp, QueuePairCapabilities capabilities, QueuePairConfig config) {
        this.context = context;
        this.qp = qp.reinterpret(ibv_qp.layout().byteSize());
        this.qpNumber = ibv_qp.qp_num(this.qp);
        this.initialPsn = PSN.nextInt() & 0xFFFFFF;
        this.capabilities = capabilities;
        this.sendCq = config.sendCompletionQueue();
        this.recvCq = config.receiveCompletionQueue();
        this.srq = config.sharedReceiveQueue();
        this.postSendFn = context.ops.postSend();
        this.postRecvFn = context.ops.postRecv();
        this.builder = config.sendOps() == 0 ? null
                : new IbvWorkRequestBuilder(qpNumber, (MemorySegment) Libibverbs.QP_TO_QP_EX.plain(this.qp), config.sendOps());
    }

    @Override
    public WorkRequestBuilder workRequestBuilder() {
        if (builder == null) {
            throw new IllegalStateException("QP " + qpNumber + " was created without send ops: use QueuePairConfig.withSendOps");
        }
        return builder;
    }

    static IbvQueuePair create(IbvProtectionDomain pd, QueuePairConfig config) {
        try (Arena arena = Arena.ofConfined()) {
            // ibv_qp_init_attr_ex begins with the fields of ibv_qp_init_attr, so one buffer serves both calls.
            MemorySegment init = arena.allocate(ibv_qp_init_attr_ex.layout());
            ibv_qp_init_attr.send_cq(init, ((IbvCompletionQueue) config.sendCompletionQueue()).cq);
            ibv_qp_init_attr.recv_cq(init, ((IbvCompletionQueue) config.receiveCompletionQueue()).cq);
            if (config.sharedReceiveQueue() != null) {
                ibv_qp_init_attr.srq(init, ((IbvSharedReceiveQueue) config.sharedReceiveQueue()).srq);
            }
            MemorySegment cap = ibv_qp_init_attr.cap(init);
            ibv_qp_cap.max_send_wr(cap, config.maxSendWr());
            ibv_qp_cap.max_send_sge(cap, config.maxSendSge());
            ibv_qp_cap.max_recv_wr(cap, config.sharedReceiveQueue() == null ? config.maxRecvWr() : 0);
            ibv_qp_cap.max_recv_sge(cap, config.sharedReceiveQueue() == null ? config.maxRecvSge() : 0);
            ibv_qp_cap.max_inline_data(cap, config.maxInlineData());
            ibv_qp_init_attr.qp_type(init, Verbs.IBV_QPT_RC());
            ibv_qp_init_attr.sq_sig_all(init, config.signalAll() ? 1 : 0);
            MemorySegment qp = config.sendOps() == 0 ? Libibverbs.CREATE_QP.pointer(pd.pd, init)
                    : createExtended(pd, init, config.sendOps(), arena);
            // The create call writes the granted capabilities back into init_attr.cap.
            QueuePairCapabilities granted = capabilities(cap);
            IbvQueuePair result = new IbvQueuePair(pd.context, qp, granted, config);
            pd.context.objects.put(qp.address(), result);
            return result;
        }
    }

    /**
     * verbs.h's inline ibv_create_qp_ex(): through the extended context's create_qp_ex op, with
     * IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS. A device that cannot post one of the
     * operations refuses the QP, and the error names them.
     */
    private static MemorySegment createExtended(IbvProtectionDomain pd, MemorySegment init, int sendOps, Arena arena) {
        String call = "ibv_create_qp_ex";
        MemorySegment op = pd.context.verbsContextWith(verbs_context.create_qp_ex$offset());
        if (op == null) {
            throw new VerbsException(call, Errno.EOPNOTSUPP, pd.context.device().name() + " has no extended QPs");
        }
        if ((sendOps & SendOps.ATOMIC_WRITE) != 0 && !pd.context.queryDevice().supportsAtomicWrite()) {
            // rxe's library (44 on) accepts the QP on any kernel; 6.1's rxe then fails every such request
            // with a local QP operation error. Refused here instead, as a library without the op would.
            throw new VerbsException(call, Errno.EOPNOTSUPP, "RC QP with send ops " + SendOps.describe(sendOps) + " on "
                    + pd.context.device().name() + ": the device has no ATOMIC_WRITE (IB_UVERBS_DEVICE_ATOMIC_WRITE; rxe: Linux 6.2 and later)");
        }
        ibv_qp_init_attr_ex.comp_mask(init, Verbs.IBV_QP_INIT_ATTR_PD() | Verbs.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS());
        ibv_qp_init_attr_ex.pd(init, pd.pd);
        ibv_qp_init_attr_ex.send_ops_flags(init, Integer.toUnsignedLong(sendOps));
        MemorySegment state = Libibverbs.allocateCaptureState(arena);
        MemorySegment qp;
        try {
            qp = (MemorySegment) Libibverbs.VCTX_CREATE_QP_EX.invokeExact(op, state, pd.context.context, init);
        } catch (Throwable t) {
            throw new VerbsException(call, "downcall failed: " + t);
        }
        if (qp.equals(MemorySegment.NULL)) {
            throw new VerbsException(call, Libibverbs.errno(state), "RC QP with send ops " + SendOps.describe(sendOps)
                    + " on " + pd.context.device().name());
        }
        return qp;
    }

    private static QueuePairCapabilities capabilities(MemorySegment cap) {
        return new QueuePairCapabilities(ibv_qp_cap.max_send_wr(cap), ibv_qp_cap.max_recv_wr(cap),
                ibv_qp_cap.max_send_sge(cap), ibv_qp_cap.max_recv_sge(cap), ibv_qp_cap.max_inline_data(cap));
    }

    @Override
    public int qpNumber() {
        return qpNumber;
    }

    @Override
    public int initialPsn() {
        return initialPsn;
    }

    @Override
    public QueuePairEndpoint localEndpoint(ConnectOptions options) {
        PortAttributes port = context.queryPort(options.portNumber());
        Gid gid;
        if (options.gidIndex() >= 0) {
            GidEntry entry = context.queryGid(options.portNumber(), options.gidIndex());
            if (entry == null) {
                throw new VerbsException("ibv_query_gid_ex", context.device().name() + " port " + options.portNumber()
                        + " has no GID at index " + options.gidIndex());
            }
            gid = entry.gid();
        } else {
            gid = Gid.of(new byte[Gid.BYTES]);
        }
        return new QueuePairEndpoint(qpNumber, initialPsn, gid, port.lid(), Mtu.min(options.mtu(), port.activeMtu()));
    }

    @Override
    public void connect(QueuePairEndpoint remote, ConnectOptions options) {
        modifyToInit(options);
        modifyToReadyToReceive(remote, options);
        modifyToReadyToSend(options);
    }

    @Override
    public void modifyToInit(ConnectOptions options) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(ibv_qp_attr.layout());
            ibv_qp_attr.qp_state(attr, QueuePairState.INIT.code());
            ibv_qp_attr.pkey_index(attr, (short) 0);
            ibv_qp_attr.port_num(attr, (byte) options.portNumber());
            ibv_qp_attr.qp_access_flags(attr, options.remoteAccess());
            modify("INIT", attr, Verbs.IBV_QP_STATE() | Verbs.IBV_QP_PKEY_INDEX() | Verbs.IBV_QP_PORT()
                    | Verbs.IBV_QP_ACCESS_FLAGS());
        }
    }

    @Override
    public void modifyToReadyToReceive(QueuePairEndpoint remote, ConnectOptions options) {
        Mtu mtu = Mtu.min(Mtu.min(options.mtu(), remote.mtu()), context.queryPort(options.portNumber()).activeMtu());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(ibv_qp_attr.layout());
            ibv_qp_attr.qp_state(attr, QueuePairState.RTR.code());
            ibv_qp_attr.path_mtu(attr, mtu.code());
            ibv_qp_attr.dest_qp_num(attr, remote.qpNumber());
            ibv_qp_attr.rq_psn(attr, remote.psn());
            ibv_qp_attr.max_dest_rd_atomic(attr, (byte) options.maxDestRdAtomic());
            ibv_qp_attr.min_rnr_timer(attr, (byte) options.minRnrTimer());
            MemorySegment ah = ibv_qp_attr.ah_attr(attr);
            ibv_ah_attr.dlid(ah, (short) remote.lid());
            ibv_ah_attr.sl(ah, (byte) 0);
            ibv_ah_attr.src_path_bits(ah, (byte) 0);
            ibv_ah_attr.port_num(ah, (byte) options.portNumber());
            if (options.gidIndex() >= 0) {
                // RoCE (and routed IB) address the peer by GID through a global route header.
                ibv_ah_attr.is_global(ah, (byte) 1);
                MemorySegment grh = ibv_ah_attr.grh(ah);
                MemorySegment.copy(remote.gid().bytes(), 0, ibv_global_route.dgid(grh), ValueLayout.JAVA_BYTE, 0, Gid.BYTES);
                ibv_global_route.sgid_index(grh, (byte) options.gidIndex());
                ibv_global_route.hop_limit(grh, (byte) 64);
            }
            modify("RTR", attr, Verbs.IBV_QP_STATE() | Verbs.IBV_QP_AV() | Verbs.IBV_QP_PATH_MTU()
                    | Verbs.IBV_QP_DEST_QPN() | Verbs.IBV_QP_RQ_PSN() | Verbs.IBV_QP_MAX_DEST_RD_ATOMIC()
                    | Verbs.IBV_QP_MIN_RNR_TIMER());
        }
    }

    @Override
    public void modifyToReadyToSend(ConnectOptions options) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(ibv_qp_attr.layout());
            ibv_qp_attr.qp_state(attr, QueuePairState.RTS.code());
            ibv_qp_attr.timeout(attr, (byte) options.timeout());
            ibv_qp_attr.retry_cnt(attr, (byte) options.retryCount());
            ibv_qp_attr.rnr_retry(attr, (byte) options.rnrRetry());
            ibv_qp_attr.sq_psn(attr, initialPsn);
            ibv_qp_attr.max_rd_atomic(attr, (byte) options.maxRdAtomic());
            modify("RTS", attr, Verbs.IBV_QP_STATE() | Verbs.IBV_QP_TIMEOUT() | Verbs.IBV_QP_RETRY_CNT()
                    | Verbs.IBV_QP_RNR_RETRY() | Verbs.IBV_QP_SQ_PSN() | Verbs.IBV_QP_MAX_QP_RD_ATOMIC());
        }
    }

    @Override
    public void modifyToError() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(ibv_qp_attr.layout());
            ibv_qp_attr.qp_state(attr, QueuePairState.ERR.code());
            modify("ERR", attr, Verbs.IBV_QP_STATE());
        }
    }

    private void modify(String state, MemorySegment attr, int mask) {
        Libibverbs.MODIFY_QP.status(state + ", QP " + qpNumber, qp, attr, mask);
    }

    @Override
    public QueuePairAttributes query() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(ibv_qp_attr.layout());
            MemorySegment init = arena.allocate(ibv_qp_init_attr.layout());
            int mask = Verbs.IBV_QP_STATE() | Verbs.IBV_QP_PATH_MTU() | Verbs.IBV_QP_DEST_QPN() | Verbs.IBV_QP_SQ_PSN()
                    | Verbs.IBV_QP_RQ_PSN() | Verbs.IBV_QP_ACCESS_FLAGS() | Verbs.IBV_QP_PORT()
                    | Verbs.IBV_QP_MAX_QP_RD_ATOMIC() | Verbs.IBV_QP_MAX_DEST_RD_ATOMIC() | Verbs.IBV_QP_MIN_RNR_TIMER()
                    | Verbs.IBV_QP_TIMEOUT() | Verbs.IBV_QP_RETRY_CNT() | Verbs.IBV_QP_RNR_RETRY() | Verbs.IBV_QP_CAP();
            Libibverbs.QUERY_QP.status("QP " + qpNumber, qp, attr, mask, init);
            int mtuCode = ibv_qp_attr.path_mtu(attr);
            return new QueuePairAttributes(
                    QueuePairState.of(ibv_qp_attr.qp_state(attr)),
                    mtuCode == 0 ? null : Mtu.of(mtuCode),
                    ibv_qp_attr.dest_qp_num(attr),
                    ibv_qp_attr.sq_psn(attr),
                    ibv_qp_attr.rq_psn(attr),
                    ibv_qp_attr.qp_access_flags(attr),
                    Byte.toUnsignedInt(ibv_qp_attr.port_num(attr)),
                    Byte.toUnsignedInt(ibv_qp_attr.max_rd_atomic(attr)),
                    Byte.toUnsignedInt(ibv_qp_attr.max_dest_rd_atomic(attr)),
                    Byte.toUnsignedInt(ibv_qp_attr.min_rnr_timer(attr)),
                    Byte.toUnsignedInt(ibv_qp_attr.timeout(attr)),
                    Byte.toUnsignedInt(ibv_qp_attr.retry_cnt(attr)),
                    Byte.toUnsignedInt(ibv_qp_attr.rnr_retry(attr)),
                    capabilities(ibv_qp_attr.cap(attr)));
        }
    }

    @Override
    public QueuePairCapabilities capabilities() {
        return capabilities;
    }

    @Override
    public void postSend(SendWorkRequests requests, int count) {
        try {
            WorkRequestPosts.post("ibv_post_send", postSendFn, qp, requests, count);
        } catch (PostException e) {
            rekeyBoundWindows(requests, Math.max(0, e.failedIndex())); // those before the refused one were posted
            throw e;
        }
        rekeyBoundWindows(requests, count);
    }

    /**
     * A posted BIND_MW gives its window the request's new key, as libibverbs' ibv_bind_mw does for a
     * type 1 window (the provider checks the window's current key against the one in the struct, so
     * the next bind must carry it). One opcode read per request.
     */
    private static void rekeyBoundWindows(SendWorkRequests requests, int posted) {
        for (int i = 0; i < posted; i++) {
            SendWorkRequest wr = requests.get(i);
            if (wr.opcodeCode() == WorkRequestOpcode.BIND_MW.code()) {
                IbvMemoryWindow.rekey(wr.bindWindowHandle(), wr.bindNewRkey());
            }
        }
    }

    @Override
    public int bindWindow(MemoryWindow window, MemoryRegion region, long address, long length, int windowAccess,
                          long wrId, int sendFlags) {
        String call = "ibv_bind_mw";
        if (!(window instanceof IbvMemoryWindow mw) || mw.isClosed()) {
            throw new IllegalArgumentException(call + ": " + window + " is not a live window of " + context.device().name());
        }
        ProviderSupport.checkWindowBind(qpNumber, mw, region, address, length,
                region instanceof IbvMemoryRegion r && r.pd.pd.address() == mw.pdAddress());
        MemorySegment fn = context.ops.bindMw();
        if (fn == null) {
            throw new VerbsException(call, Errno.EOPNOTSUPP, context.device().name() + " has no memory windows");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment bind = arena.allocate(MW_BIND);
            bind.set(ValueLayout.JAVA_LONG, 0, wrId);
            bind.set(ValueLayout.JAVA_INT, 8, sendFlags);
            MemorySegment info = bind.asSlice(MW_BIND_INFO, ibv_mw_bind_info.layout().byteSize());
            ibv_mw_bind_info.mr(info, region == null ? MemorySegment.NULL : MemorySegment.ofAddress(region.handle()));
            ibv_mw_bind_info.addr(info, address);
            ibv_mw_bind_info.length(info, length);
            ibv_mw_bind_info.mw_access_flags(info, windowAccess);
            MemorySegment state = Libibverbs.allocateCaptureState(arena);
            int rc = (int) Libibverbs.OPS_BIND_MW.invokeExact(fn, state, qp, mw.mw, bind);
            if (rc != 0) {
                throw new VerbsException(call, Libibverbs.errnoOf(rc, state), "QP " + qpNumber + ", window rkey 0x"
                        + Integer.toHexString(mw.rkey()) + ", " + length + " bytes " + Access.describe(windowAccess));
            }
            return mw.rkey();
        } catch (VerbsException e) {
            throw e;
        } catch (Throwable t) {
            throw new VerbsException(call, "downcall failed: " + t);
        }
    }

    @Override
    public void postReceive(ReceiveWorkRequests requests, int count) {
        if (srq != null) {
            throw new IllegalStateException("QP " + qpNumber + " takes its receives from an SRQ: post them there");
        }
        WorkRequestPosts.post("ibv_post_recv", postRecvFn, qp, requests, count);
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

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            context.objects.remove(qp.address());
            Libibverbs.DESTROY_QP.status("QP " + qpNumber, qp);
            if (builder != null) {
                builder.close(); // after the QP: nothing posts through it any more
            }
        }
    }

    @Override
    public String toString() {
        return "QP " + qpNumber + " on " + context.device().name();
    }
}
