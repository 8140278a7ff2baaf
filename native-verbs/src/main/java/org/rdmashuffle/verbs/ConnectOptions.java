package org.rdmashuffle.verbs;

/**
 * The local half of an RC connection: which port and GID to use, the MTU to ask for, what the
 * peer may do to this QP's memory, and the retry policy. Defaults follow perftest's.
 *
 * @param gidIndex GID table index; -1 addresses the peer by LID (InfiniBand without GRH)
 * @param remoteAccess what the peer may do ({@link Access} REMOTE_* bits)
 * @param maxRdAtomic outstanding RDMA_READs/atomics this QP may issue
 * @param maxDestRdAtomic outstanding RDMA_READs/atomics the peer may issue to this QP
 * @param timeout local ACK timeout, 4.096 µs × 2^timeout
 */
public record ConnectOptions(
        int portNumber,
        int gidIndex,
        Mtu mtu,
        int remoteAccess,
        int maxRdAtomic,
        int maxDestRdAtomic,
        int minRnrTimer,
        int timeout,
        int retryCount,
        int rnrRetry) {

    public static ConnectOptions defaults(int portNumber, int gidIndex, Mtu mtu) {
        return new ConnectOptions(portNumber, gidIndex, mtu,
                Access.REMOTE_READ | Access.REMOTE_WRITE | Access.REMOTE_ATOMIC,
                16, 16, 12, 14, 7, 7);
    }

    public ConnectOptions withRnrRetry(int retries) {
        return new ConnectOptions(portNumber, gidIndex, mtu, remoteAccess, maxRdAtomic, maxDestRdAtomic,
                minRnrTimer, timeout, retryCount, retries);
    }

    public ConnectOptions withRemoteAccess(int access) {
        return new ConnectOptions(portNumber, gidIndex, mtu, access, maxRdAtomic, maxDestRdAtomic,
                minRnrTimer, timeout, retryCount, rnrRetry);
    }

    public ConnectOptions withRetry(int timeout, int retryCount) {
        return new ConnectOptions(portNumber, gidIndex, mtu, remoteAccess, maxRdAtomic, maxDestRdAtomic,
                minRnrTimer, timeout, retryCount, rnrRetry);
    }
}
