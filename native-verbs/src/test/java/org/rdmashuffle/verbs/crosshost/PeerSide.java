package org.rdmashuffle.verbs.crosshost;

import java.net.InetAddress;

import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.GidChoice;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.PortAttributes;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.ReceiveWorkRequests;
import org.rdmashuffle.verbs.SharedReceiveQueue;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsDevice;

/**
 * One end of a cross-host connection: a PD, one CQ, optionally a shared receive queue, an RC queue pair, and one region (data, then receive slots) open to remote read, write and
 * atomics. The test's end and the agent's end are the same class. Closes children first.
 */
final class PeerSide implements AutoCloseable {
    final VerbsContext context;
    final ProtectionDomain pd;
    final CompletionQueue cq;
    final SharedReceiveQueue srq;
    final QueuePair qp;
    final MemoryRegion region;
    final PeerWire.Setup setup;
    final ConnectOptions options;

    // address: where the other host reaches this one; its GID is the one we send from
    /** @param sendOps the builder operations the QP is made for (0: ibv_post_send only) */
    PeerSide(VerbsDevice device, InetAddress address, PeerWire.Setup setup, boolean failFast, int sendOps) {
        this.setup = setup;
        this.context = device.open();
        try {
            PortAttributes port = context.queryPort(1);
            GidChoice gid = GidChoice.choose(context, port, address);
            ConnectOptions o = ConnectOptions.defaults(1, gid.index(), port.activeMtu() == null ? Mtu.MTU_1024
                    : Mtu.min(Mtu.MTU_4096, port.activeMtu())).withRemoteAccess(Access.REMOTE_READ | Access.REMOTE_WRITE
                    | Access.REMOTE_ATOMIC);
            // Few retries where a test provokes a remote error: the requester learns it at once, not after seconds.
            this.options = failFast ? o.withRnrRetry(1).withRetry(14, 1) : o;
            this.pd = context.allocateProtectionDomain();
            this.cq = context.createCompletionQueue(256, null, 0);
            int receives = Math.max(1, setup.receives());
            this.srq = setup.sharedReceiveQueue() ? pd.createSharedReceiveQueue(receives, 1, 0) : null;
            QueuePairConfig config = QueuePairConfig.of(cq, 128, receives, 4).withSendOps(sendOps);
            this.qp = pd.createQueuePair(srq == null ? config : config.withSharedReceiveQueue(srq));
            this.region = pd.allocateAndRegister(setup.regionBytes(), Access.LOCAL_WRITE | Access.REMOTE_READ
                    | Access.REMOTE_WRITE | Access.REMOTE_ATOMIC);
            postReceives();
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
    }

    private void postReceives() {
        if (setup.receives() == 0) {
            return;
        }
        try (ReceiveWorkRequests r = ReceiveWorkRequests.allocate(setup.receives(), 1)) {
            for (int i = 0; i < setup.receives(); i++) {
                r.set(i, 1000 + i, region, setup.receiveOffset(i), setup.receiveBytes());
            }
            if (srq != null) {
                srq.postReceive(r, setup.receives());
            } else {
                qp.postReceive(r, setup.receives());
            }
        }
    }

    PeerWire.Region remote() {
        return new PeerWire.Region(region.address(), region.rkey(), region.length());
    }

    @Override
    public void close() {
        closeQuietly(qp);
        closeQuietly(srq);
        closeQuietly(region);
        closeQuietly(cq);
        closeQuietly(pd);
        closeQuietly(context);
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c != null) {
            try {
                c.close();
            } catch (Exception ignored) {
                // closing what was made; the first failure is already on its way
            }
        }
    }
}
