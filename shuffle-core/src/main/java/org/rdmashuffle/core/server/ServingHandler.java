package org.rdmashuffle.core.server;

import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.transport.ConnectionHandler;
import org.rdmashuffle.core.transport.ConnectionTable;
import org.rdmashuffle.core.transport.DataConnection;
import org.rdmashuffle.core.transport.MetadataSender;

/**
 * The owner of the serving connections of one application ({@link ServedTenant}): its reducers'
 * fetch requests go to the {@link FetchRequestServer}; a connection that fails is retired (logged
 * once); a peer that sends a malformed or unexpected message is told why and cut off once the answer
 * is sent, or after a grace period if it is not, and so is one whose message this side threw on (told
 * only that the server failed); a retired connection is counted out of
 * {@link ServiceUsage}, and what it held of its application's outputs ({@link ConnectionHolds}) given
 * back. One per connection; beyond what it is given it keeps only those holds. Threads are the
 * router's (poller, timer, async-event) and whichever retires a connection.
 */
final class ServingHandler implements ConnectionHandler {
    private static final System.Logger LOG = System.getLogger(ServingHandler.class.getName());
    /**
     * A reducer chooses how many of its connections fail or are cut off (it may CONNECT, misbehave and
     * CONNECT again): logged once a minute with a count, for every serving connection of the process.
     */
    private static final org.rdmashuffle.verbs.util.RepeatedWarning CLOSINGS =
            new org.rdmashuffle.verbs.util.RepeatedWarning(LOG, 60, TimeUnit.SECONDS);
    /** What a connection error tells a peer at most: it fits the smallest receive buffer a peer may name. */
    private static final int MAX_TOLD_CHARS = 256;

    private final ServedTenant tenant;
    private final FetchRequestServer requests;
    private final ConnectionTable connections;
    private final MetadataSender sender;
    private final ScheduledExecutorService timer;
    private final long graceMillis;
    private final ServiceUsage usage;
    /** What the connection holds through held answers; null if its peer speaks a version before them. */
    private final ConnectionHolds holds;

    /**
     * @param graceMillis how long a peer cut off for a protocol error has to take the error before its connection goes
     * @param protocolVersion the control protocol version its session agreed: from 5, held answers and releases
     */
    ServingHandler(ServedTenant tenant, FetchRequestServer requests, ConnectionTable connections, MetadataSender sender,
                   ScheduledExecutorService timer, long graceMillis, ServiceUsage usage, int protocolVersion) {
        this.holds = protocolVersion >= org.rdmashuffle.core.control.ControlSession.HELD_ANSWERS ? new ConnectionHolds() : null;
        this.tenant = tenant;
        this.requests = requests;
        this.connections = connections;
        this.sender = sender;
        this.timer = timer;
        this.graceMillis = graceMillis;
        this.usage = usage;
    }

    @Override
    public void onMessage(DataConnection c, Message m) {
        requests.onMessage(tenant, c, m, holds);
    }

    @Override
    public void onReadCompleted(DataConnection c, long chainId, Throwable failure) {
        // A serving connection posts no reads: a read completion on it is for nobody.
    }

    @Override
    public void onFailure(DataConnection c, Throwable cause) {
        if (c.markClosing()) { // logged once per connection, however many ways it fails
            CLOSINGS.warn("rdma-shuffle: closing " + c + ": " + cause.getMessage());
        }
        connections.retire(c);
    }

    /** Says why, then closes: one close per connection, however many bad messages its peer sends. */
    @Override
    public void onProtocolError(DataConnection c, String reason) {
        closeSaying(c, "malformed message on " + c + ": " + reason + "; closing it", null, "malformed message: " + reason);
    }

    /**
     * This side threw answering the peer (a bug, or a request no check caught): the reducer is told
     * the server failed (nothing of the failure itself: it is ours, in our log) and the connection
     * closes as for a protocol error, so its fetches fail now instead of at their timeout.
     */
    @Override
    public void onCallbackFailed(DataConnection c, Throwable cause) {
        closeSaying(c, cause.getMessage() + " on " + c + "; closing it", cause.getCause(),
                "the server failed handling a message on this connection (see its log)");
    }

    /**
     * Logs {@code logLine} (with {@code thrown}, if any), sends the peer a connection error saying
     * {@code toPeer}, and retires {@code c} once that is sent or the grace period is over; once per
     * connection.
     */
    private void closeSaying(DataConnection c, String logLine, Throwable thrown, String toPeer) {
        if (!c.markClosing()) {
            return;
        }
        long before = CLOSINGS.warnings();
        CLOSINGS.warn("rdma-shuffle: " + logLine);
        if (thrown != null && CLOSINGS.warnings() != before) { // a bug's stack, with the warning it goes with
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: what was thrown on " + c, thrown);
        }
        String told = toPeer.length() > MAX_TOLD_CHARS ? toPeer.substring(0, MAX_TOLD_CHARS) : toPeer;
        try {
            sender.send(c, new Message.ErrorResponse(Message.CONNECTION_ERROR, told), true);
            timer.schedule(() -> connections.retire(c), graceMillis, TimeUnit.MILLISECONDS);
        } catch (RuntimeException e) {
            connections.retire(c);
        }
    }

    /** Its windows go while its queue pair is in ERR, before it is destroyed (rxe is slow to destroy a QP with windows bound). */
    @Override
    public void beforeDestroy(DataConnection c) {
        if (tenant.windows() != null) {
            tenant.windows().forget(c);
        }
    }

    @Override
    public void onRetired(DataConnection c) {
        if (holds != null) {
            tenant.registry().drop(holds);
        }
        usage.remove(ServiceUsage.Kind.DATA, tenant.app());
    }

    /** A chain of window binds completed: its slots come back; one that failed fails its connection. */
    @Override
    public void onWindowCompleted(DataConnection c, Throwable failure) {
        if (tenant.windows() != null) {
            tenant.windows().completed(c);
        }
        ConnectionHandler.super.onWindowCompleted(c, failure);
    }
}
