package org.rdmashuffle.verbs;

import java.lang.foreign.ValueLayout;

/**
 * Whether a device's on-demand paging gives every byte, checked by doing what a shuffle does, on a
 * queue pair connected to itself, the bytes compared: an RDMA_READ from an on-demand region into
 * another at offsets and a length that are not whole pages; where that fails, the same with both
 * ends starting on page boundaries (the length still not whole pages), and a SEND of more than a page
 * and a short one, each from the start of a page of an on-demand region into the start of one.
 *
 * <p>A device may say it pages on demand and still get this wrong. rxe in Linux 7.2 and 7.3
 * (measured: 7.2.12, 7.2.13, 7.3-rc7) copies each packet to or from the start of the page its address
 * falls in, ignoring the offset within it, and never past that page: any transfer that starts inside
 * a page of an on-demand region gets wrong bytes, silently. One that starts on a page boundary, with
 * packets of a whole page (path MTU 4096), is right. The engine then reads from page boundaries
 * ({@link Result#pageStartOnly()}); a device that fails both is not used on demand. Run once, where
 * on-demand paging is about to be relied on.
 */
public final class OnDemandPagingCheck {
    /** The page the check's transfers start on, and so the one an engine keeping to page boundaries aligns to. */
    public static final int PAGE = 4096;
    /** Bytes of each region: four pages, so every transfer crosses pages. */
    private static final int REGION = 4 * PAGE;
    private static final int FROM = 1_234;
    private static final int TO = 5_678 - PAGE;
    private static final int LENGTH = 6_000;
    /** The page-start read: two pages and a part, from page 1 into page 1. */
    private static final int PAGE_START_LENGTH = 2 * PAGE + 1_234;
    /** The sends: more than a page (two packets), and a short one. */
    private static final int[] SEND_LENGTHS = {PAGE + 1_000, 100};
    private static final long TIMEOUT_NANOS = 5_000_000_000L;

    /**
     * What the check found.
     *
     * @param failure          null when reads at any offset give every byte; else what went wrong
     * @param pageStartFailure null when reads and sends that start on page boundaries give every byte,
     *                         or when that was not checked ({@code failure} null); else what went wrong
     */
    public record Result(String failure, String pageStartFailure) {
        /** Registering on demand is safe: at any offset, or from page boundaries. */
        public boolean usable() {
            return failure == null || pageStartFailure == null;
        }

        /** Safe only for transfers that start on page boundaries. */
        public boolean pageStartOnly() {
            return failure != null && pageStartFailure == null;
        }

        /** Why on-demand paging is not usable (null if it is). */
        public String why() {
            return usable() ? null : failure + "; from page boundaries too: " + pageStartFailure;
        }
    }

    private OnDemandPagingCheck() {
    }

    /**
     * Checks {@code context}'s device on {@code port}. Never throws for the device's own failure
     * (that is the answer); the resources it makes are closed before it returns.
     */
    public static Result check(VerbsContext context, int port) {
        String failure = run(context, port, false);
        return new Result(failure, failure == null ? null : run(context, port, true));
    }

    private static String run(VerbsContext context, int port, boolean pageStart) {
        PortAttributes attributes = context.queryPort(port);
        ConnectOptions options = ConnectOptions.defaults(port,
                GidChoice.choose(context, attributes, null).index(), Mtu.min(Mtu.MTU_4096, attributes.activeMtu()));
        try (ProtectionDomain pd = context.allocateProtectionDomain();
             CompletionQueue cq = context.createCompletionQueue(8, null, 0);
             QueuePair requester = pd.createQueuePair(QueuePairConfig.of(cq, 2, 1, 1));
             QueuePair responder = pd.createQueuePair(QueuePairConfig.of(cq, 2, 1, 1));
             MemoryRegion remote = pd.allocateAndRegister(REGION, Access.REMOTE_READ | Access.ON_DEMAND);
             MemoryRegion local = pd.allocateAndRegister(REGION, Access.LOCAL_WRITE | Access.ON_DEMAND);
             SendWorkRequests send = SendWorkRequests.allocate(1, 1);
             ReceiveWorkRequests receive = ReceiveWorkRequests.allocate(1, 1);
             WorkCompletions completions = WorkCompletions.allocate(2)) {
            requester.connect(responder.localEndpoint(options), options);
            responder.connect(requester.localEndpoint(options), options);
            for (int i = 0; i < REGION; i++) {
                remote.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
            }
            int from = pageStart ? PAGE : FROM;
            int to = pageStart ? PAGE : TO;
            int length = pageStart ? PAGE_START_LENGTH : LENGTH;
            send.get(0).rdmaRead(1, SendFlags.SIGNALED, local, to, length, remote.address() + from, remote.rkey());
            requester.postSend(send, 1);
            String failed = await(cq, completions, 1, "an on-demand RDMA_READ");
            if (failed == null) {
                failed = compare(context, remote, from, local, to, length, pageStart ? "RDMA_READ" : null);
            }
            for (int k = 0; pageStart && failed == null && k < SEND_LENGTHS.length; k++) {
                // The read's source sends, from its first page; the read's target receives, from page 2.
                int n = SEND_LENGTHS[k];
                int into = 2 * PAGE;
                receive.set(0, 2, local, into, 2 * PAGE);
                responder.postReceive(receive, 1);
                send.get(0).reset().wrId(3).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED)
                        .sge(0, remote, 0, n).sgeCount(1);
                remote.segment().set(ValueLayout.JAVA_BYTE, 0, (byte) k); // a fresh first byte each time
                requester.postSend(send, 1);
                failed = await(cq, completions, 2, "an on-demand SEND");
                if (failed == null) {
                    failed = compare(context, remote, 0, local, into, n, "SEND of " + n + " bytes");
                }
            }
            return failed;
        } catch (VerbsException e) {
            return "checking on-demand paging failed: " + e.getMessage();
        }
    }

    /** Waits for {@code count} successful completions; null, or what went wrong. */
    private static String await(CompletionQueue cq, WorkCompletions completions, int count, String what) {
        long deadline = System.nanoTime() + TIMEOUT_NANOS;
        int seen = 0;
        while (seen < count) {
            int n = cq.poll(completions);
            for (int i = 0; i < n; i++) {
                if (!completions.isSuccess(i)) {
                    return what + " failed: " + completions.failure(i).getMessage();
                }
            }
            seen += n;
            if (n == 0) {
                if (System.nanoTime() > deadline) {
                    return what + " did not complete within 5 s";
                }
                Thread.onSpinWait();
            }
        }
        return null;
    }

    private static String compare(VerbsContext context, MemoryRegion source, int from, MemoryRegion target, int to, int length,
                                  String pageStartWhat) {
        for (int i = 0; i < length; i++) {
            byte want = source.segment().get(ValueLayout.JAVA_BYTE, from + i);
            byte got = target.segment().get(ValueLayout.JAVA_BYTE, to + i);
            if (got != want) {
                return pageStartWhat == null
                        ? context.device().name() + "'s on-demand paging returned wrong bytes: a " + length + "-byte RDMA_READ "
                                + "from offset " + from + " of one on-demand region into offset " + to + " of another differs "
                                + "from byte " + i + " on (a kernel bug: rxe in Linux 7.2 gets transfers not starting on a page wrong)"
                        : context.device().name() + "'s on-demand paging returned wrong bytes even from page boundaries: a "
                                + pageStartWhat + " of " + length + " bytes from offset " + from + " of one on-demand region into offset "
                                + to + " of another differs from byte " + i + " on";
            }
        }
        return null;
    }
}
