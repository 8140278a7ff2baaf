package org.rdmashuffle.core.transport;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.function.IntFunction;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.protocol.MalformedMessageException;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.protocol.MessageCodec;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkCompletions;

/**
 * Routes each completion of a poller's batch to its owner, by the kind its wr_id carries
 * ({@link WorkRequestIds}): a receive is decoded from its tenant's receive buffer (found by the index
 * the wr_id carries, so a late completion of a closed tenant is dropped) and handed, with its
 * connection found by queue-pair number in the {@link ConnectionTable}, to the connection's
 * {@link ConnectionHandler}, then the buffer is reposted; a metadata send to the
 * {@link MetadataSender}; a read chain, and a chain of memory-window binds, to its connection's handler. A completion of a connection
 * retired meanwhile is for nobody and is dropped.
 *
 * <p>A handler that throws costs only its own completion, never the rest of the batch (those would
 * otherwise be lost: the CQ hands each completion out once), whatever it throws, an {@link Error} too.
 * A connection's owner that throws on its message, read or window completion (a bug, or input no
 * check caught) fails that connection at once ({@link ConnectionHandler#onCallbackFailed}): what waits
 * on it fails now, not at its timeout, and the poller goes on serving the others.
 * Runs on poller threads only; it keeps no state of its own beyond the codec each thread has.
 */
public final class CompletionRouter implements CompletionPoller.Handler {
    private static final System.Logger LOG = System.getLogger(CompletionRouter.class.getName());

    /** One kind's route: completion {@code i} of {@code wcs}, whose wr_id carries {@code value}. */
    @FunctionalInterface
    interface Route {
        void handle(WorkCompletions wcs, int i, long value);
    }

    private final IntFunction<TenantDomain> tenantByIndex;
    private final ConnectionTable connections;
    private final MetadataSender sender;
    private final ThreadLocal<MessageCodec> codec;
    private final int receiveBufferSize;
    private final FailedCompletions failures;
    private final Route receives;
    private final Route sends;
    private final Route reads;
    private final Route windows;
    /** Failed completions by status, of every kind (flushes included: a QP that went to error says so). */
    private final org.rdmashuffle.core.metrics.CompletionErrors errors = new org.rdmashuffle.core.metrics.CompletionErrors();

    /**
     * @param tenantByIndex the live tenant a receive wr_id's index names, or null once it is gone
     * @param receiveBufferSize this side's receive buffer size, named when a receive overflows it
     */
    public CompletionRouter(IntFunction<TenantDomain> tenantByIndex, ConnectionTable connections, MetadataSender sender,
                            ThreadLocal<MessageCodec> codec, int receiveBufferSize, FailedCompletions failures) {
        this.tenantByIndex = tenantByIndex;
        this.connections = connections;
        this.sender = sender;
        this.codec = codec;
        this.receiveBufferSize = receiveBufferSize;
        this.failures = failures;
        this.receives = this::onReceive;
        this.sends = this::onSendCompleted;
        this.reads = this::onReadCompleted;
        this.windows = this::onWindowCompleted;
    }

    /** The routing of kinds alone, to given routes (tests: a batch survives a route that throws). */
    CompletionRouter(Route receives, Route sends, Route reads) {
        this.tenantByIndex = null;
        this.connections = null;
        this.sender = null;
        this.codec = null;
        this.receiveBufferSize = 0;
        this.failures = null;
        this.receives = receives;
        this.sends = sends;
        this.reads = reads;
        this.windows = (wcs, i, value) -> { };
    }

    @Override
    public void handle(WorkCompletions wcs, int n) {
        for (int i = 0; i < n; i++) {
            long wrId = wcs.wrId(i);
            long value = WorkRequestIds.value(wrId);
            if (!wcs.isSuccess(i)) {
                errors.failed(wcs.status(i));
            }
            try {
                switch (WorkRequestIds.kind(wrId)) {
                    case WorkRequestIds.RECEIVE -> receives.handle(wcs, i, value);
                    case WorkRequestIds.SEND -> sends.handle(wcs, i, value);
                    case WorkRequestIds.READ -> reads.handle(wcs, i, value);
                    default -> windows.handle(wcs, i, value); // WorkRequestIds.WINDOW: two bits, four kinds
                }
            } catch (RuntimeException | Error e) {
                LOG.log(System.Logger.Level.ERROR, "rdma-shuffle: handling the completion of wr_id 0x" + Long.toHexString(wrId)
                        + " (" + wcs.status(i) + ") failed; the batch goes on", e);
            }
        }
    }

    /** Failed completions by status, since start. */
    public java.util.Map<WorkCompletionStatus, Long> errors() {
        return errors.snapshot();
    }

    private void onReceive(WorkCompletions wcs, int i, long slot) {
        TenantDomain tenant = tenantByIndex.apply(TenantDomain.tenantOf(slot));
        if (tenant == null) {
            return; // a flushed receive of a tenant closed since: its pool is gone
        }
        ReceivePool receivePool = tenant.receivePool();
        synchronized (receivePool) {
            if (tenant.isClosed()) {
                return;
            }
            receivePool.consumed();
        }
        try {
            DataConnection c = connections.byQpNumber(wcs.qpNumber(i));
            if (!wcs.isSuccess(i)) {
                if (c != null && wcs.status(i) != WorkCompletionStatus.WR_FLUSH_ERR) {
                    c.handler().onFailure(c, new IOException("a receive failed with " + wcs.status(i) + " (a message over the "
                            + receiveBufferSize + "-byte receive buffer, " + EngineConfig.KEY_RECEIVE_BUFFER_SIZE + "?)",
                            wcs.failure(i)));
                }
                return;
            }
            if (c == null) {
                return; // for a connection retired meanwhile
            }
            if (c.tenant() != tenant) { // cannot happen: a QP receives only from its own PD's SRQ
                c.handler().onProtocolError(c, "a message in another application's receive buffer");
                return;
            }
            if (c.isClosing()) {
                return; // closing after a protocol error: what else its peer sends costs nothing
            }
            Message m;
            try {
                MemorySegment received;
                synchronized (receivePool) {
                    if (tenant.isClosed()) {
                        return;
                    }
                    received = receivePool.buffer(slot, wcs.byteLength(i));
                }
                m = codec.get().decode(received, wcs.byteLength(i));
            } catch (MalformedMessageException | IllegalArgumentException e) {
                c.handler().onProtocolError(c, e.getMessage());
                return;
            }
            MessageTamper tamper = sender.tamper();
            try {
                if (tamper != MessageTamper.NONE) {
                    tamper.received(c, m);
                }
                c.handler().onMessage(c, m);
            } catch (RuntimeException | Error e) {
                ownerThrew(c, "a " + m.getClass().getSimpleName(), e);
            }
        } finally {
            synchronized (receivePool) {
                if (!tenant.isClosed()) {
                    receivePool.repost(slot);
                }
            }
        }
    }

    private void onSendCompleted(WorkCompletions wcs, int i, long seq) {
        boolean ok = wcs.isSuccess(i);
        IOException failure = null;
        if (!ok) {
            DataConnection c = connections.byQpNumber(wcs.qpNumber(i));
            failure = new IOException("a metadata SEND failed with " + wcs.status(i)
                    + (c == null ? "" : failures.send(wcs.status(i), c.toString(), c.peerGid())), wcs.failure(i));
        }
        sender.onCompleted(seq, ok, failure);
    }

    private void onReadCompleted(WorkCompletions wcs, int i, long chainId) {
        DataConnection c = connections.byQpNumber(wcs.qpNumber(i));
        if (c == null) {
            return; // retired meanwhile: its owner failed its chains when it retired it
        }
        try {
            c.handler().onReadCompleted(c, chainId, wcs.isSuccess(i) ? null
                    : new IOException("RDMA_READ failed with " + wcs.status(i) + failures.read(wcs.status(i), c.toString(), c.peerGid()),
                    wcs.failure(i)));
        } catch (RuntimeException | Error e) {
            ownerThrew(c, "a read completion", e);
        }
    }

    private void onWindowCompleted(WorkCompletions wcs, int i, long value) {
        DataConnection c = connections.byQpNumber(wcs.qpNumber(i));
        if (c == null) {
            return; // retired meanwhile: its windows were deallocated with it
        }
        try {
            c.handler().onWindowCompleted(c, wcs.isSuccess(i) ? null : new IOException(
                    "a memory-window bind failed with " + wcs.status(i), wcs.failure(i)));
        } catch (RuntimeException | Error e) {
            ownerThrew(c, "a window bind's completion", e);
        }
    }

    /**
     * {@code c}'s owner threw handling {@code what}: the connection fails through its owner, with a
     * cause naming what was handled and what was thrown (every block it owes fails with it). If the
     * owner throws at that too, the connection is retired here, so it never lingers half-failed.
     */
    private void ownerThrew(DataConnection c, String what, Throwable thrown) {
        IOException cause = new IOException("handling " + what + " threw " + thrown, thrown);
        try {
            c.handler().onCallbackFailed(c, cause);
        } catch (RuntimeException | Error e) {
            e.addSuppressed(thrown);
            LOG.log(System.Logger.Level.ERROR, "rdma-shuffle: failing " + c + " after its owner threw failed too; retiring it", e);
            connections.retire(c);
        }
    }
}
