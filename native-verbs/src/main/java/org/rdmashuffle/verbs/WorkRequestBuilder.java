package org.rdmashuffle.verbs;

/**
 * The extended post path ({@code ibv_wr_*} on {@code struct ibv_qp_ex}): {@link #start()}, then per
 * work request {@link #wrId}/{@link #flags} and one operation plus its data, then
 * {@link #complete()} posts everything since start, or {@link #abort()} discards it.
 * <pre>{@code
 * b.start();
 * for (...) { b.wrId(id).flags(last ? SIGNALED : 0).rdmaRead(rkey, remote).sge(lkey, local, len); }
 * b.complete();
 * }</pre>
 * Only for a QP created with {@link QueuePairConfig#withSendOps(int)} naming the operations used.
 *
 * <p>Concurrency: QPs are created without a thread domain, so the provider locks the region from
 * start to complete/abort; two threads may post on one QP, and the second waits in {@code start}.
 * Allocates nothing per call.
 */
public interface WorkRequestBuilder {

    /** {@code ibv_wr_start}: opens the region (takes the provider's QP lock). */
    void start();

    /** Sets {@code qp_ex->wr_id} for the next operation. */
    WorkRequestBuilder wrId(long wrId);

    /** Sets {@code qp_ex->wr_flags} ({@link SendFlags}) for the next operation. */
    WorkRequestBuilder flags(int sendFlags);

    WorkRequestBuilder rdmaRead(int rkey, long remoteAddress);

    WorkRequestBuilder rdmaWrite(int rkey, long remoteAddress);

    /** Immediate data in host order; it travels in network order. */
    WorkRequestBuilder rdmaWriteWithImmediate(int rkey, long remoteAddress, int immediate);

    WorkRequestBuilder send();

    /** A send with immediate data; with no SGE set it carries 0 bytes. */
    WorkRequestBuilder sendWithImmediate(int immediate);

    WorkRequestBuilder compareAndSwap(int rkey, long remoteAddress, long compare, long swap);

    WorkRequestBuilder fetchAndAdd(int rkey, long remoteAddress, long add);

    /**
     * {@code ibv_wr_bind_mw}: binds type 2 {@code window} under {@code newRkey} to
     * {@code [address, address + length)} of {@code region} with {@code windowAccess}, for this QP.
     * Needs {@link SendOps#BIND_MW}. The window's {@link MemoryWindow#rkey()} is {@code newRkey} once
     * {@link #complete()} posted it.
     */
    WorkRequestBuilder bindWindow(MemoryWindow window, int newRkey, MemoryRegion region, long address, long length,
                                  int windowAccess);

    /** {@code ibv_wr_local_inv}: takes back the type 2 window {@code rkey}. Needs {@link SendOps#LOCAL_INV}. */
    WorkRequestBuilder localInvalidate(int rkey);

    /** {@code ibv_wr_send_inv}: a send that takes back the receiver's window {@code rkey}. Needs {@link SendOps#SEND_WITH_INV}. */
    WorkRequestBuilder sendWithInvalidate(int rkey);

    /**
     * {@code ibv_wr_flush}: makes the peer's earlier writes to {@code [remoteAddress, remoteAddress + length)}
     * of region {@code rkey} globally visible or persistent ({@code placement}: {@link #FLUSH_GLOBAL},
     * {@link #FLUSH_PERSISTENT}; {@code level}: {@link #FLUSH_RANGE} or the whole region, {@link #FLUSH_REGION});
     * completes with {@link WorkCompletionOpcode#FLUSH}. Needs {@link SendOps#FLUSH}, which a QP gets only
     * from a library and device that have FLUSH ({@link DeviceAttributes#supportsFlush()}).
     */
    WorkRequestBuilder flush(int rkey, long remoteAddress, long length, int placement, int level);

    /**
     * {@code ibv_wr_atomic_write}: writes the 8 bytes of {@code value} (in this machine's byte order) at
     * {@code remoteAddress} of region {@code rkey} as one: no reader there sees half of them. The address
     * must be 8-byte aligned (else the peer answers an invalid request) and the region allow remote
     * writes; completes with {@link WorkCompletionOpcode#ATOMIC_WRITE}. Needs {@link SendOps#ATOMIC_WRITE},
     * which a QP gets only on a device with atomic write ({@link DeviceAttributes#supportsAtomicWrite()}).
     */
    WorkRequestBuilder atomicWrite(int rkey, long remoteAddress, long value);

    /** {@code IBV_FLUSH_GLOBAL}. */
    int FLUSH_GLOBAL = 1;
    /** {@code IBV_FLUSH_PERSISTENT}. */
    int FLUSH_PERSISTENT = 1 << 1;
    /** {@code IBV_FLUSH_RANGE}. */
    int FLUSH_RANGE = 0;
    /** {@code IBV_FLUSH_MR}. */
    int FLUSH_REGION = 1;

    /** One SGE for the current operation ({@code ibv_wr_set_sge}). */
    WorkRequestBuilder sge(int lkey, long address, int length);

    /** The first {@code count} SGEs of {@code list} ({@code ibv_wr_set_sge_list}). */
    WorkRequestBuilder sgeList(ScatterGatherList list, int count);

    /** Copies {@code length} bytes at {@code address} into the request ({@code ibv_wr_set_inline_data}). */
    WorkRequestBuilder inlineData(long address, int length);

    /** The first {@code count} buffers of {@code list} as inline data ({@code ibv_wr_set_inline_data_list}). */
    WorkRequestBuilder inlineDataList(ScatterGatherList list, int count);

    /**
     * {@code ibv_wr_complete}: posts everything since start. On failure nothing of the region was
     * posted and a {@link VerbsException} names the call and errno.
     */
    void complete();

    /** {@code ibv_wr_abort}: discards everything since start; nothing is posted. */
    void abort();
}
