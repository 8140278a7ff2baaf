package org.rdmashuffle.core.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/** Fetch calls off the caller's thread: in order, bounded, and none lost at close. */
class FetchSubmitterTest {
    @Test
    void callsRunInOrderOnADaemonThreadNotTheCallers() throws Exception {
        try (FetchSubmitter s = new FetchSubmitter("test-submitter")) {
            List<Integer> order = new CopyOnWriteArrayList<>();
            List<Thread> ranOn = new CopyOnWriteArrayList<>();
            CountDownLatch done = new CountDownLatch(100);
            for (int i = 0; i < 100; i++) {
                int n = i;
                s.submit(() -> {
                    order.add(n);
                    ranOn.add(Thread.currentThread());
                    done.countDown();
                });
            }
            assertTrue(done.await(30, TimeUnit.SECONDS));
            assertEquals(java.util.stream.IntStream.range(0, 100).boxed().toList(), order);
            assertNotSame(Thread.currentThread(), ranOn.get(0));
            assertTrue(ranOn.get(0).isDaemon() && ranOn.get(0).getName().equals("test-submitter"), ranOn.get(0).toString());
        }
    }

    /** The thread held by a call that does not return: the queue fills, and the next caller runs its own call. */
    @Test
    void aFullQueueRunsTheCallOnTheCallerInsteadOfDroppingIt() throws Exception {
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        try (FetchSubmitter s = new FetchSubmitter("test-submitter")) {
            s.submit(() -> {
                holding.countDown();
                await(release);
            });
            assertTrue(holding.await(30, TimeUnit.SECONDS));
            CountDownLatch queuedRan = new CountDownLatch(FetchSubmitter.MAX_QUEUED);
            for (int i = 0; i < FetchSubmitter.MAX_QUEUED; i++) {
                s.submit(queuedRan::countDown);
            }
            Thread[] ranOn = new Thread[1];
            s.submit(() -> ranOn[0] = Thread.currentThread());
            assertSame(Thread.currentThread(), ranOn[0], "the call past the bound ran on its caller, at once");
            release.countDown();
            assertTrue(queuedRan.await(30, TimeUnit.SECONDS), "every queued call ran");
        }
    }

    /**
     * Closed while its thread is held and calls wait: close returns within its bound, having run the
     * waiting calls itself; a call submitted after close runs on its caller.
     */
    @Test
    void callsWaitingAtCloseRunOnTheClosingThread() throws Exception {
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        FetchSubmitter s = new FetchSubmitter("test-submitter");
        try {
            s.submit(() -> {
                holding.countDown();
                await(release);
            });
            assertTrue(holding.await(30, TimeUnit.SECONDS));
            List<Thread> ranOn = new CopyOnWriteArrayList<>();
            for (int i = 0; i < 3; i++) {
                s.submit(() -> ranOn.add(Thread.currentThread()));
            }
            long t0 = System.nanoTime();
            s.close();
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(10), "close is bounded");
            assertEquals(List.of(Thread.currentThread(), Thread.currentThread(), Thread.currentThread()), ranOn);
            s.submit(() -> ranOn.add(Thread.currentThread()));
            assertEquals(4, ranOn.size(), "after close the caller runs its call");
        } finally {
            release.countDown();
        }
    }

    private static void await(CountDownLatch l) {
        try {
            l.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
