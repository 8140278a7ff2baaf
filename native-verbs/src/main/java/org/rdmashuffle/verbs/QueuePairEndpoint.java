package org.rdmashuffle.verbs;

/**
 * What a peer needs to connect its RC queue pair to ours: our QP number, the PSN our send queue
 * starts at, and our address (GID for RoCE and routed IB, LID for IB subnets). Exchanged over the
 * control plane.
 */
public record QueuePairEndpoint(int qpNumber, int psn, Gid gid, int lid, Mtu mtu) {
    public QueuePairEndpoint {
        if ((psn & ~0xFFFFFF) != 0) {
            throw new IllegalArgumentException("a PSN has 24 bits: " + psn);
        }
        if ((qpNumber & ~0xFFFFFF) != 0) {
            throw new IllegalArgumentException("a QP number has 24 bits: " + qpNumber);
        }
    }
}
