package org.rdmashuffle.verbs.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.CompletionChannel;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletions;

/** Sleeping on a completion channel instead of polling: arm, wait, acknowledge, poll, re-arm. */
class CompletionChannelTest {

    @Test
    void armedQueueRaisesOneEventAndAnIdleWaitTimesOut() {
        try (Loopback l = Loopback.open()) {
            CompletionChannel channel = l.context.createCompletionChannel();
            CompletionQueue cq = l.context.createCompletionQueue(16, channel, 0);
            QueuePair qp = l.pd.createQueuePair(QueuePairConfig.of(cq, 8, 1, 1));
            try (MemoryRegion remote = l.pd.allocateAndRegister(4096, Access.REMOTE_READ | Access.LOCAL_WRITE);
                 MemoryRegion local = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
                 SendWorkRequests chain = SendWorkRequests.allocate(1, 1);
                 WorkCompletions wc = WorkCompletions.allocate(4)) {
                // A fresh peer QP on the target side, so this CQ sees only this test's completions.
                QueuePair peer = l.pd.createQueuePair(QueuePairConfig.of(l.cqB, 8, 1, 1));
                qp.connect(peer.localEndpoint(l.options), l.options);
                peer.connect(qp.localEndpoint(l.options), l.options);

                cq.requestNotify(false);
                long start = System.nanoTime();
                assertNull(channel.awaitEvent(Duration.ofMillis(200)), "no completion yet, so no event");
                assertTrue(System.nanoTime() - start >= Duration.ofMillis(150).toNanos(), "the wait was bounded, not skipped");

                chain.get(0).rdmaRead(61, SendFlags.SIGNALED, local, 0, 128, remote.address(), remote.rkey());
                qp.postSend(chain, 1);
                CompletionQueue woke = channel.awaitEvent(VerbsTestSupport.TIMEOUT);
                assertSame(cq, woke);
                woke.acknowledgeEvents(1);
                int n = 0;
                long deadline = System.nanoTime() + VerbsTestSupport.TIMEOUT.toNanos();
                while (n == 0 && System.nanoTime() < deadline) {
                    n = cq.poll(wc);
                }
                assertEquals(1, n);
                assertEquals(61, wc.wrId(0));
                peer.close();
            } finally {
                qp.close();
                cq.close();
                channel.close();
            }
        }
    }
}
