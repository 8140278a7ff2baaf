package org.rdmashuffle.verbs;

/**
 * A reliable-connected queue pair ({@code struct ibv_qp}, {@code IBV_QPT_RC}). Created in RESET;
 * {@link #connect} walks it through INIT, RTR and RTS to the peer's endpoint.
 */
public interface QueuePair extends AutoCloseable {

    int qpNumber();

    /** The PSN this QP's send queue starts at; the peer needs it as its receive PSN. */
    int initialPsn();

    /** What the peer needs to connect to this QP over {@code port} and {@code gidIndex}. */
    QueuePairEndpoint localEndpoint(ConnectOptions options);

    /** RESET → INIT → RTR → RTS against the peer's endpoint. */
    void connect(QueuePairEndpoint remote, ConnectOptions options);

    void modifyToInit(ConnectOptions options);

    void modifyToReadyToReceive(QueuePairEndpoint remote, ConnectOptions options);

    void modifyToReadyToSend(ConnectOptions options);

    /** Moves the QP to ERR: outstanding work requests complete with flush errors. */
    void modifyToError();

    QueuePairAttributes query();

    /** The capabilities the provider granted at creation. */
    QueuePairCapabilities capabilities();

    /**
     * Posts the first {@code count} send work requests as one linked chain ({@code ibv_post_send}).
     * Allocates nothing on success; on refusal throws {@link PostException} naming the bad request.
     */
    void postSend(SendWorkRequests requests, int count);

    /**
     * The extended post path of a QP created with {@link QueuePairConfig#withSendOps(int)}; made
     * once per QP. Throws {@link IllegalStateException} for a QP created without send ops.
     */
    WorkRequestBuilder workRequestBuilder();

    /**
     * {@code ibv_bind_mw}: binds a type 1 window to {@code [address, address + length)} of {@code region}
     * with {@code windowAccess} ({@link Access#REMOTE_READ}, {@code REMOTE_WRITE}, {@code REMOTE_ATOMIC}),
     * posted on this QP's send queue as a work request that completes with
     * {@link WorkCompletionOpcode#BIND_MW} (when signaled). Returns the window's new rkey. The region
     * must have been registered with {@link Access#MW_BIND}; a bad bind completes with
     * {@link WorkCompletionStatus#MW_BIND_ERR}. {@code region} null and length 0 unbind the window.
     * Type 2 windows are bound by a work request instead ({@link SendWorkRequest#bindWindow}).
     */
    int bindWindow(MemoryWindow window, MemoryRegion region, long address, long length, int windowAccess,
                   long wrId, int sendFlags);

    /** Posts receive requests to this QP's own receive queue ({@code ibv_post_recv}). */
    void postReceive(ReceiveWorkRequests requests, int count);

    CompletionQueue sendCompletionQueue();

    CompletionQueue receiveCompletionQueue();

    /** The SRQ receives come from, or null when the QP has its own receive queue. */
    SharedReceiveQueue sharedReceiveQueue();

    @Override
    void close();
}
