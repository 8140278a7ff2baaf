package org.rdmashuffle.verbs;

import java.lang.foreign.ValueLayout;

/**
 * Whether a device's on-demand paging gives every byte, checked by doing what a shuffle does: an
 * RDMA_READ from an on-demand region into another, at offsets and a length that are not whole pages,
 * on a queue pair connected to itself, and the bytes compared. A device may say it pages on demand
 * and still get this wrong: rxe in Linux 7.2 (7.2.12 and 7.2.13, measured) returns wrong bytes for
 * any read that starts or ends inside a page of an on-demand region (docs/native-verbs.md), which
 * would corrupt shuffle blocks silently. Run once, where on-demand paging is about to be relied on.
 */
public final class OnDemandPagingCheck {
    /** Bytes of each region: two pages and a half, so the read crosses pages at both ends. */
    private static final int REGION = 10_240;
    private static final int FROM = 1_234;
    private static final int TO = 5_678 - 4_096;
    private static final int LENGTH = 6_000;
    private static final long TIMEOUT_NANOS = 5_000_000_000L;

    private OnDemandPagingCheck() {
    }

    /**
     * Null when an unaligned read between two untouched on-demand regions of {@code context}'s device
     * gives every byte; else what went wrong, in words for a log line. Never throws for the device's
     * own failure (that is the answer); the resources it makes are closed before it returns.
     */
    public static String failure(VerbsContext context, int port) {
        PortAttributes attributes = context.queryPort(port);
        ConnectOptions options = ConnectOptions.defaults(port,
                GidChoice.choose(context, attributes, null).index(), Mtu.min(Mtu.MTU_4096, attributes.activeMtu()));
        try (ProtectionDomain pd = context.allocateProtectionDomain();
             CompletionQueue cq = context.createCompletionQueue(4, null, 0);
             QueuePair requester = pd.createQueuePair(QueuePairConfig.of(cq, 2, 1, 1));
             QueuePair responder = pd.createQueuePair(QueuePairConfig.of(cq, 2, 1, 1));
             MemoryRegion remote = pd.allocateAndRegister(REGION, Access.REMOTE_READ | Access.ON_DEMAND);
             MemoryRegion local = pd.allocateAndRegister(REGION, Access.LOCAL_WRITE | Access.ON_DEMAND);
             SendWorkRequests read = SendWorkRequests.allocate(1, 1);
             WorkCompletions completions = WorkCompletions.allocate(2)) {
            requester.connect(responder.localEndpoint(options), options);
            responder.connect(requester.localEndpoint(options), options);
            for (int i = 0; i < REGION; i++) {
                remote.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
            }
            read.get(0).rdmaRead(1, SendFlags.SIGNALED, local, TO, LENGTH, remote.address() + FROM, remote.rkey());
            requester.postSend(read, 1);
            long deadline = System.nanoTime() + TIMEOUT_NANOS;
            int n;
            while ((n = cq.poll(completions)) == 0) {
                if (System.nanoTime() > deadline) {
                    return "an on-demand RDMA_READ did not complete within 5 s";
                }
                Thread.onSpinWait();
            }
            if (!completions.isSuccess(0)) {
                return "an on-demand RDMA_READ failed: " + completions.failure(0).getMessage();
            }
            for (int i = 0; i < LENGTH; i++) {
                byte want = (byte) ((FROM + i) * 31 + 7);
                byte got = local.segment().get(ValueLayout.JAVA_BYTE, TO + i);
                if (got != want) {
                    return context.device().name() + "'s on-demand paging returned wrong bytes: a " + LENGTH + "-byte RDMA_READ "
                            + "from offset " + FROM + " of one on-demand region into offset " + TO + " of another differs "
                            + "from byte " + i + " on (a kernel bug: rxe in Linux 7.2 gets reads not aligned to pages wrong)";
                }
            }
            return null;
        } catch (VerbsException e) {
            return "checking on-demand paging failed: " + e.getMessage();
        }
    }
}
