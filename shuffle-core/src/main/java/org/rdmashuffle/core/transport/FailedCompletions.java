package org.rdmashuffle.core.transport;

import org.rdmashuffle.verbs.Gid;
import org.rdmashuffle.verbs.GidChoice;
import org.rdmashuffle.verbs.Trouble;
import org.rdmashuffle.verbs.WorkCompletionStatus;

/**
 * What a failed completion most likely means, as the {@link Trouble} line an operator can act on.
 * Across hosts a retry counter exceeded is the path's fault far more often than the peer's, and which
 * work request failed says which part of the path: a metadata SEND never acknowledged means nothing
 * gets through to the peer's GID; an RDMA_READ whose responses never arrive, on a connection whose
 * request and answer (small messages) went through, means packets of the path MTU do not pass a hop
 * on the way. Immutable.
 */
final class FailedCompletions {
    private final GidChoice gid;
    private final String device;
    private final int port;
    private final int mtuBytes;

    FailedCompletions(GidChoice gid, String device, int port, int mtuBytes) {
        this.gid = gid;
        this.device = device;
        this.port = port;
        this.mtuBytes = mtuBytes;
    }

    /** Text to append to a failed RDMA_READ's error on {@code peer}'s connection ("" when nothing is known). */
    String read(WorkCompletionStatus status, String peer, Gid peerGid) {
        return switch (status) {
            case REM_ACCESS_ERR -> " -- " + Trouble.REMOTE_ACCESS.line(peer + " refused an RDMA_READ (REM_ACCESS_ERR)",
                    "an rkey and range the peer registered and still holds", "usually none: the output was released (its "
                            + "lease ended, its application stopped, its map lost) and the block is asked for again; if "
                            + "it repeats, the serving side's log names the block");
            case RETRY_EXC_ERR -> " -- " + Trouble.PATH_MTU.line("RDMA_READ responses from " + peer + " never arrived "
                            + "(RETRY_EXC_ERR) though its answer to our request did" + path(peerGid),
                    "every hop between the hosts to carry " + mtuBytes + "-byte RoCE packets (the path MTU this "
                            + "connection uses)", "raise the MTU of the switch ports, VLAN, bridge or veth between them to "
                            + "the NICs' (or lower the NICs' netdev MTU, which lowers the RoCE MTU); a peer that died "
                            + "shows the same, and then its other connections fail too");
            default -> "";
        };
    }

    /** Text to append to a failed metadata SEND's error ("" when nothing is known). */
    String send(WorkCompletionStatus status, String peer, Gid peerGid) {
        return status == WorkCompletionStatus.RETRY_EXC_ERR
                ? " -- " + Trouble.GID_UNREACHABLE.line("a SEND to " + peer + " was never acknowledged (RETRY_EXC_ERR)"
                        + path(peerGid), "RoCE packets to get from our GID to the peer's",
                "check `ip route get` and `ip neigh` for its address, that UDP 4791 (RoCE v2) passes, and that its "
                        + "engine is alive")
                : "";
    }

    private String path(Gid peerGid) {
        return peerGid == null || gid.index() < 0 ? "" : ", at GID " + peerGid + " from our GID[" + gid.index() + "] "
                + gid.gid() + " on " + device + " port " + port;
    }
}
