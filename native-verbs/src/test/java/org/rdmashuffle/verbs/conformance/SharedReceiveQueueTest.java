package org.rdmashuffle.verbs.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.AsyncEvent;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.ReceiveWorkRequests;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.SharedReceiveQueue;
import org.rdmashuffle.verbs.SharedReceiveQueueAttributes;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkRequestOpcode;

/**
 * A shared receive queue as the engine uses it: a pool of registered buffers posted once, consumed
 * by sends arriving on several QPs, and a low-water limit that raises an async event.
 */
class SharedReceiveQueueTest {
    private static final int POOL = 16;
    private static final int BUFFER = 256;

    /**
     * {@code ibv_post_srq_recv}'s {@code bad_recv_wr}: a chain whose third receive has more SGEs than
     * the SRQ takes is refused there, naming it; the two before it were posted and take sends.
     */
    @Test
    void aRefusedPostNamesItsBadReceiveAndThoseBeforeItWerePosted() {
        try (Loopback l = Loopback.open();
             MemoryRegion buffers = l.pd.allocateAndRegister(POOL * BUFFER, Access.LOCAL_WRITE);
             CompletionQueue srqCq = l.context.createCompletionQueue(16, null, 0);
             SharedReceiveQueue srq = l.pd.createSharedReceiveQueue(8, 1, 0)) {
            int maxSge = srq.query().maxSge();
            try (ReceiveWorkRequests recv = ReceiveWorkRequests.allocate(4, maxSge + 1);
                 QueuePair receiver = l.pd.createQueuePair(QueuePairConfig.of(srqCq, 8, 0, 1).withSharedReceiveQueue(srq));
                 QueuePair sender = l.pd.createQueuePair(QueuePairConfig.of(l.cqA, 8, 8, 1));
                 SendWorkRequests sends = SendWorkRequests.allocate(2, 1)) {
                for (int i = 0; i < 4; i++) {
                    recv.set(i, 100 + i, buffers, (long) i * BUFFER, BUFFER);
                }
                for (int s = 1; s <= maxSge; s++) {
                    recv.sge(2, s, buffers.address() + 2L * BUFFER, 8, buffers.lkey());
                }
                recv.sgeCount(2, maxSge + 1);
                org.rdmashuffle.verbs.PostException e = org.junit.jupiter.api.Assertions.assertThrows(
                        org.rdmashuffle.verbs.PostException.class, () -> srq.postReceive(recv, 4));
                assertEquals("ibv_post_srq_recv", e.call());
                assertEquals(2, e.failedIndex(), e::getMessage);
                assertEquals(102, e.failedWrId());
                assertTrue(e.getMessage().contains("work request #2 (wr_id 102)"), e.getMessage());

                receiver.connect(sender.localEndpoint(l.options), l.options);
                sender.connect(receiver.localEndpoint(l.options), l.options);
                for (int i = 0; i < 2; i++) {
                    sends.get(i).reset().wrId(i).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED)
                            .sge(0, buffers, (long) (8 + i) * BUFFER, 16).sgeCount(1);
                }
                sender.postSend(sends, 2);
                Set<Long> took = new HashSet<>();
                for (VerbsTestSupport.Completion c : VerbsTestSupport.awaitCompletions(srqCq, 2)) {
                    assertEquals(WorkCompletionStatus.SUCCESS, c.status(), c::toString);
                    took.add(c.wrId());
                }
                assertEquals(Set.of(100L, 101L), took, "the receives before the refused one were posted");
            }
        }
    }

    @Test
    void pooledReceivesServeSeveralQueuePairsAndTheLimitFires() {
        try (Loopback l = Loopback.open();
             CompletionQueue srqCq = l.context.createCompletionQueue(64, null, 0);
             SharedReceiveQueue srq = l.pd.createSharedReceiveQueue(POOL, 1, 0);
             MemoryRegion pool = l.pd.allocateAndRegister((long) POOL * BUFFER, Access.LOCAL_WRITE);
             MemoryRegion src = l.pd.allocateAndRegister(BUFFER, Access.LOCAL_WRITE);
             ReceiveWorkRequests recv = ReceiveWorkRequests.allocate(POOL, 1);
             SendWorkRequests send = SendWorkRequests.allocate(1, 1)) {
            SharedReceiveQueueAttributes attrs = srq.query();
            assertTrue(attrs.maxWr() >= POOL, attrs::toString);

            for (int i = 0; i < POOL; i++) {
                recv.set(i, 1000 + i, pool, (long) i * BUFFER, BUFFER);
            }
            srq.postReceive(recv, POOL);
            srq.armLimit(POOL - 2);
            assertEquals(POOL - 2, srq.query().limit());

            // Two receiving QPs share the SRQ; two senders (on one CQ) talk to them.
            QueuePairConfig onSrq = QueuePairConfig.of(srqCq, 8, 0, 1).withSharedReceiveQueue(srq);
            try (QueuePair r1 = l.pd.createQueuePair(onSrq);
                 QueuePair r2 = l.pd.createQueuePair(onSrq);
                 QueuePair s1 = l.pd.createQueuePair(QueuePairConfig.of(l.cqA, 8, 1, 1));
                 QueuePair s2 = l.pd.createQueuePair(QueuePairConfig.of(l.cqA, 8, 1, 1))) {
                r1.connect(s1.localEndpoint(l.options), l.options);
                s1.connect(r1.localEndpoint(l.options), l.options);
                r2.connect(s2.localEndpoint(l.options), l.options);
                s2.connect(r2.localEndpoint(l.options), l.options);
                assertSame(srq, r1.sharedReceiveQueue());

                for (int i = 0; i < 4; i++) {
                    send.get(0).reset().wrId(i).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED)
                            .sge(0, src, 0, 32 + i).sgeCount(1);
                    (i % 2 == 0 ? s1 : s2).postSend(send, 1);
                }
                VerbsTestSupport.awaitCompletions(l.cqA, 4);
                List<VerbsTestSupport.Completion> received = VerbsTestSupport.awaitCompletions(srqCq, 4);
                Set<Long> buffers = new HashSet<>();
                Set<Integer> qps = new HashSet<>();
                for (VerbsTestSupport.Completion c : received) {
                    assertEquals(WorkCompletionStatus.SUCCESS, c.status());
                    assertTrue(c.wrId() >= 1000 && c.wrId() < 1000 + POOL, "wr_id " + c.wrId());
                    buffers.add(c.wrId());
                    qps.add(c.qpNumber());
                }
                assertEquals(4, buffers.size(), "each message took its own pooled buffer");
                assertEquals(Set.of(r1.qpNumber(), r2.qpNumber()), qps);

                AsyncEvent event = awaitEvent(l, AsyncEvent.Type.SRQ_LIMIT_REACHED);
                assertSame(srq, event.source());
                assertEquals(0, srq.query().limit(), "the limit disarms once it fired");
            }
        }
    }

    /**
     * {@code ibv_destroy_srq} refuses (EBUSY) while a queue pair still uses the SRQ, and the SRQ is
     * left whole: once the queue pair is destroyed, it closes. (The engine's tenant close relies on
     * the order: queue pairs first.)
     */
    @Test
    void aSharedReceiveQueueWithAQueuePairOnItRefusesToGo_andGoesOnceItIsDestroyed() {
        try (Loopback l = Loopback.open();
             CompletionQueue srqCq = l.context.createCompletionQueue(16, null, 0)) {
            SharedReceiveQueue srq = l.pd.createSharedReceiveQueue(8, 1, 0);
            QueuePair onIt = l.pd.createQueuePair(QueuePairConfig.of(srqCq, 8, 0, 1).withSharedReceiveQueue(srq));
            org.rdmashuffle.verbs.VerbsException busy = org.junit.jupiter.api.Assertions.assertThrows(
                    org.rdmashuffle.verbs.VerbsException.class, srq::close);
            assertEquals(org.rdmashuffle.verbs.Errno.EBUSY, busy.errno(), busy::getMessage);
            assertTrue(srq.query().maxWr() >= 8, "the refused SRQ is still there");
            onIt.close();
            srq.close();
        }
    }

    private static AsyncEvent awaitEvent(Loopback l, AsyncEvent.Type type) {
        long deadline = System.nanoTime() + VerbsTestSupport.TIMEOUT.toNanos();
        while (System.nanoTime() < deadline) {
            AsyncEvent e = l.context.awaitAsyncEvent(Duration.ofMillis(500));
            if (e != null && e.type() == type) {
                return e;
            }
        }
        assertNotNull(null, "no " + type + " event within " + VerbsTestSupport.TIMEOUT);
        return null;
    }
}
