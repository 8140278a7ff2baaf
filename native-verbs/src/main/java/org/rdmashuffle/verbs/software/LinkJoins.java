package org.rdmashuffle.verbs.software;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.VerbsException;

/**
 * How QPs join each other over one {@link PeerLink}: our QP asks with an ATTACH that carries the
 * token from its peer QP's endpoint and waits (bounded) for the ATTACH_ACK; the peer's ATTACHes are
 * checked against the token we issued. Only a QP joined this way sends or receives on the link.
 */
final class LinkJoins {
    /** Verdicts of a join besides 0 (joined): the link closed first, the peer refused, our QP failed meanwhile. */
    private static final int LINK_CLOSED = -1;
    private static final int REFUSED = 1;
    private static final int FAILED_MEANWHILE = 2;

    private record Attaching(SoftQueuePair qp, int peerQpn, CompletableFuture<Integer> verdict) {
    }

    private final PeerLink link;
    /** Our QPs waiting for their ATTACH_ACK, by local QPN. */
    private final Map<Integer, Attaching> attaching = new ConcurrentHashMap<>();

    LinkJoins(PeerLink link) {
        this.link = link;
    }

    /**
     * Joins {@code qp} to its peer QP {@code peerQpn} with the peer's {@code token}, waiting (bounded)
     * for the answer. False if the link closed first (the caller dials a new one).
     */
    boolean attach(SoftQueuePair qp, int peerQpn, String token, String call) {
        Attaching a = new Attaching(qp, peerQpn, new CompletableFuture<>());
        synchronized (link) { // the link closes under its monitor, then fails every join waiting here
            if (link.isClosed()) {
                return false;
            }
            attaching.put(qp.qpNumber(), a);
        }
        try {
            byte[] secret = token.getBytes(StandardCharsets.US_ASCII);
            Frame f = Frame.request(Frame.ATTACH, 0);
            f.srcQpn = qp.qpNumber();
            f.dstQpn = peerQpn;
            f.length = secret.length;
            f.payload = new ByteBuffer[] {ByteBuffer.wrap(secret)};
            link.send(f);
            int verdict = a.verdict().get(SoftQueuePair.DIAL_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            if (verdict == LINK_CLOSED) {
                return false;
            }
            if (verdict == FAILED_MEANWHILE) {
                throw new VerbsException(call, Errno.EINVAL, "QP " + qp.qpNumber() + " failed or closed while joining");
            }
            if (verdict != 0) {
                throw new VerbsException(call, Errno.ECONNREFUSED, "peer " + link.peer() + " refused the data connection for QP "
                        + peerQpn + " (wrong or expired admission token?)");
            }
            return true;
        } catch (TimeoutException e) {
            // The peer may still take the ATTACH and join its QP to ours, which failed: told to leave, it
            // does (the DETACH follows the ATTACH on the stream), instead of staying joined to nobody.
            link.sendDetach(qp.qpNumber(), peerQpn);
            throw new VerbsException(call, Errno.ETIMEDOUT, "peer " + link.peer() + " did not answer the join of QP " + peerQpn
                    + " within " + SoftQueuePair.DIAL_TIMEOUT_MILLIS + " ms");
        } catch (ExecutionException e) {
            throw new VerbsException(call, Errno.ECONNREFUSED, "cannot reach peer " + link.peer() + ": " + e.getCause().getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new VerbsException(call, Errno.EINTR, "interrupted while joining QP " + peerQpn + " at " + link.peer());
        } finally {
            attaching.remove(qp.qpNumber(), a);
        }
    }

    /** The peer answered one of our ATTACHes (the loop). */
    void onAttachAck(Frame f) {
        Attaching a = attaching.get(f.dstQpn);
        if (a == null || a.peerQpn() != f.srcQpn) {
            return; // not asked, or given up on (a DETACH went after it)
        }
        int verdict = f.status == 0 ? 0 : REFUSED;
        // Joined before the dialling thread wakes: the peer's first frames may follow at once.
        if (verdict == 0 && a.qp().joined(link, f.srcQpn)) {
            link.join(a.qp());
        } else if (verdict == 0) {
            verdict = FAILED_MEANWHILE; // our QP failed or closed while joining: the peer's leaves too
            link.sendDetach(f.dstQpn, f.srcQpn);
        }
        a.verdict().complete(verdict);
    }

    /** The peer's QP {@code srcQpn} asks to join our QP {@code dstQpn} with {@code token} (the loop). */
    void onAttach(int srcQpn, int dstQpn, String token) throws IOException {
        SoftDevice device = link.device();
        SoftQueuePair qp = device.queuePairs.get(dstQpn);
        String refusal = null;
        if (qp == null) {
            refusal = "no QP " + dstQpn;
        } else if (!device.admits(dstQpn, token, qp.issuedToken())) {
            refusal = "invalid admission token for QP " + dstQpn;
        } else if (!qp.acceptJoin(link, srcQpn)) {
            refusal = "QP " + dstQpn + " is not waiting for a connection";
        }
        Frame ack = Frame.response(Frame.ATTACH_ACK, 0, refusal == null ? 0 : 1);
        ack.srcQpn = dstQpn;
        ack.dstQpn = srcQpn;
        if (refusal == null) {
            link.join(qp);
            link.send(ack);
            return;
        }
        device.refused("refused QP " + dstQpn + " to a peer at " + link.peer() + ": " + refusal);
        link.send(ack, true); // now, not at the end of the loop's turn: the link may hang up below
        if (!link.everJoined()) {
            // Nobody uses this link: answer and hang up, as a refused connection always was.
            throw new IOException("refused the link's first join: " + refusal);
        }
    }

    boolean nonePending() {
        return attaching.isEmpty();
    }

    /** The link closed: every join waiting for its answer is told so (its QP dials a new link). */
    void linkClosed() {
        for (Attaching a : List.copyOf(attaching.values())) {
            a.verdict().complete(LINK_CLOSED);
        }
    }
}
