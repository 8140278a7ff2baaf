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
                awaitTheEventAndPoll(channel, cq, wc, 61);
                peer.close();
            } finally {
                qp.close();
                cq.close();
                channel.close();
            }
        }
    }

    /** What a poller's stop relies on: a waiter returns at once when woken, long before its timeout. */
    @Test
    void wakeUpReturnsAWaiterAtOnce_andTheNextEventStillArrives() throws Exception {
        try (Loopback l = Loopback.open()) {
            CompletionChannel channel = l.context.createCompletionChannel();
            CompletionQueue cq = l.context.createCompletionQueue(16, channel, 0);
            QueuePair qp = l.pd.createQueuePair(QueuePairConfig.of(cq, 8, 1, 1));
            try (MemoryRegion remote = l.pd.allocateAndRegister(4096, Access.REMOTE_READ | Access.LOCAL_WRITE);
                 MemoryRegion local = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
                 SendWorkRequests chain = SendWorkRequests.allocate(1, 1);
                 WorkCompletions wc = WorkCompletions.allocate(4)) {
                QueuePair peer = l.pd.createQueuePair(QueuePairConfig.of(l.cqB, 8, 1, 1));
                qp.connect(peer.localEndpoint(l.options), l.options);
                peer.connect(qp.localEndpoint(l.options), l.options);
                cq.requestNotify(false);

                Duration longWait = Duration.ofSeconds(120);
                java.util.concurrent.CompletableFuture<CompletionQueue> waiter = java.util.concurrent.CompletableFuture.supplyAsync(
                        () -> channel.awaitEvent(longWait), r -> Thread.ofPlatform().daemon().start(r));
                Thread.sleep(100); // most likely asleep in the wait by now; if not, the wake-up waits for it
                long woken = System.nanoTime();
                channel.wakeUp();
                assertNull(waiter.get(60, java.util.concurrent.TimeUnit.SECONDS), "woken, not an event");
                assertTrue(System.nanoTime() - woken < longWait.toNanos() / 2, "returned on the wake-up, not the timeout");

                // A wake-up with nobody waiting is kept for the next wait, which returns at once.
                channel.wakeUp();
                long start = System.nanoTime();
                assertNull(channel.awaitEvent(longWait));
                assertTrue(System.nanoTime() - start < longWait.toNanos() / 2, "the kept wake-up ended the wait");

                // The queue stayed armed through both: the completion's event is delivered as ever.
                chain.get(0).rdmaRead(62, SendFlags.SIGNALED, local, 0, 128, remote.address(), remote.rkey());
                qp.postSend(chain, 1);
                awaitTheEventAndPoll(channel, cq, wc, 62);
                peer.close();
            } finally {
                qp.close();
                cq.close();
                channel.close();
            }
            channel.wakeUp(); // closed: a no-op, never a write to a stale descriptor
        }
    }

    /** The device's async-event waiter is woken the same way (the engine's watcher sleeps until an event or its close). */
    @Test
    void wakeAsyncEventWaiterReturnsTheWaitAtOnce() throws Exception {
        try (Loopback l = Loopback.open()) {
            for (int i = 0; i < 100 && l.context.awaitAsyncEvent(Duration.ofMillis(100)) != null; i++) {
                // events the device raised before the test (a port coming up) are not what it waits for
            }
            Duration longWait = Duration.ofSeconds(120);
            java.util.concurrent.CompletableFuture<org.rdmashuffle.verbs.AsyncEvent> waiter =
                    java.util.concurrent.CompletableFuture.supplyAsync(() -> l.context.awaitAsyncEvent(longWait),
                            r -> Thread.ofPlatform().daemon().start(r));
            Thread.sleep(100);
            long woken = System.nanoTime();
            l.context.wakeAsyncEventWaiter();
            assertNull(waiter.get(60, java.util.concurrent.TimeUnit.SECONDS), "woken, not an event");
            assertTrue(System.nanoTime() - woken < longWait.toNanos() / 2, "returned on the wake-up, not the timeout");
        }
    }

    /** The armed queue's event arrives on the channel; acknowledged, its one completion is {@code wrId}'s. */
    private static void awaitTheEventAndPoll(CompletionChannel channel, CompletionQueue cq, WorkCompletions wc, long wrId) {
        CompletionQueue woke = channel.awaitEvent(VerbsTestSupport.TIMEOUT);
        assertSame(cq, woke);
        woke.acknowledgeEvents(1);
        int n = 0;
        long deadline = System.nanoTime() + VerbsTestSupport.TIMEOUT.toNanos();
        while (n == 0 && System.nanoTime() < deadline) {
            n = cq.poll(wc);
        }
        assertEquals(1, n);
        assertEquals(wrId, wc.wrId(0));
    }
}
