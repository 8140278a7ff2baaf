package org.rdmashuffle.verbs;

/**
 * What a peer needs to connect its RC queue pair to ours: our QP number, the PSN our send queue
 * starts at, and our address (GID for RoCE and routed IB, LID for IB subnets). Exchanged over the
 * authenticated control plane.
 *
 * @param admissionToken a secret the peer must present to open a data connection to this QP, for
 *     providers that carry QPs on connections of their own (the software provider); null for
 *     hardware, where the fabric admits by QPN and PSN
 */
public record QueuePairEndpoint(int qpNumber, int psn, Gid gid, int lid, Mtu mtu, String admissionToken) {

    public QueuePairEndpoint(int qpNumber, int psn, Gid gid, int lid, Mtu mtu) {
        this(qpNumber, psn, gid, lid, mtu, null);
    }

    public QueuePairEndpoint {
        if ((psn & ~0xFFFFFF) != 0) {
            throw new IllegalArgumentException("a PSN has 24 bits: " + psn);
        }
        if ((qpNumber & ~0xFFFFFF) != 0) {
            throw new IllegalArgumentException("a QP number has 24 bits: " + qpNumber);
        }
    }

    @Override
    public String toString() {
        // Never print the token: endpoints end up in logs.
        return "QueuePairEndpoint[qpn " + qpNumber + ", psn " + psn + ", gid " + gid + ", lid " + lid + ", " + mtu
                + (admissionToken == null ? "" : ", token present") + "]";
    }
}
