package org.rdmashuffle.core.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Work of many applications on a few threads: taken in turns, each application bounded in what waits and what runs. */
class FairServerQueueTest {
    private final ExecutorService threads = Executors.newFixedThreadPool(3, r -> Thread.ofPlatform().daemon().unstarted(r));

    @AfterEach
    void stop() {
        threads.shutdownNow();
    }

    @Test
    void tasksThatBlockHoldNoMoreThreadsThanTheirApplicationsShare() throws Exception {
        FairServerQueue queue = new FairServerQueue(threads, 16, 2, Integer.MAX_VALUE);
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch twoBlocked = new CountDownLatch(2);
        for (int i = 0; i < 5; i++) { // five dials that hang until released
            assertTrue(queue.submit("hog", () -> {
                twoBlocked.countDown();
                await(release);
            }));
        }
        assertTrue(twoBlocked.await(10, TimeUnit.SECONDS));
        CountDownLatch served = new CountDownLatch(1);
        assertTrue(queue.submit("other", served::countDown));
        assertTrue(served.await(10, TimeUnit.SECONDS), "the other application waited for the hog's tasks");
        assertEquals(2, queue.running("hog"));
        assertEquals(3, queue.waiting("hog"));
        release.countDown();
        eventually(() -> queue.running("hog") == 0 && queue.waiting("hog") == 0);
    }

    @Test
    void beyondItsWaitingShareAnApplicationIsRefused_andOthersAreNot() throws Exception {
        FairServerQueue queue = new FairServerQueue(threads, 2, 1, Integer.MAX_VALUE);
        CountDownLatch release = new CountDownLatch(1);
        assertTrue(queue.submit("hog", () -> await(release))); // runs
        eventually(() -> queue.running("hog") == 1);
        assertTrue(queue.submit("hog", () -> { }));
        assertTrue(queue.submit("hog", () -> { }));
        assertFalse(queue.submit("hog", () -> { }), "a third waiting task of one application");
        CountDownLatch served = new CountDownLatch(1);
        assertTrue(queue.submit("other", served::countDown));
        assertTrue(served.await(10, TimeUnit.SECONDS));
        release.countDown();
        eventually(() -> queue.waiting("hog") == 0 && queue.running("hog") == 0);
    }

    @Test
    void waitingApplicationsTakeTurns() throws Exception {
        FairServerQueue queue = new FairServerQueue(Executors.newSingleThreadExecutor(r -> Thread.ofPlatform().daemon()
                .unstarted(r)), 16);
        CountDownLatch release = new CountDownLatch(1);
        List<String> order = new CopyOnWriteArrayList<>();
        queue.submit("gate", () -> await(release));
        for (int i = 0; i < 3; i++) {
            queue.submit("a", () -> order.add("a"));
        }
        queue.submit("b", () -> order.add("b"));
        release.countDown();
        eventually(() -> order.size() == 4);
        assertEquals(List.of("a", "b", "a", "a"), order);
    }

    @Test
    void aFailingTaskDoesNotStrandTheNextOfItsApplication() throws Exception {
        FairServerQueue queue = new FairServerQueue(threads, 16, 1, Integer.MAX_VALUE);
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch second = new CountDownLatch(1);
        queue.submit("a", () -> {
            await(release);
            throw new IllegalStateException("a task failing on purpose");
        });
        queue.submit("a", second::countDown); // waits: one of a's may run at a time
        release.countDown();
        assertTrue(second.await(10, TimeUnit.SECONDS), "the task after a failing one never ran");
    }

    /** A user running several applications holds no more threads than one user's share, however many applications. */
    @Test
    void tasksOfOneUsersApplicationsHoldNoMoreThreadsThanTheUsersShare() throws Exception {
        FairServerQueue queue = new FairServerQueue(threads, 16, 2, 2);
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch twoBlocked = new CountDownLatch(2);
        for (String app : List.of("mallory-1", "mallory-2", "mallory-3")) {
            for (int i = 0; i < 2; i++) { // dials that hang until released, two per application
                assertTrue(queue.submit(app, "mallory", () -> {
                    twoBlocked.countDown();
                    await(release);
                }));
            }
        }
        assertTrue(twoBlocked.await(10, TimeUnit.SECONDS));
        CountDownLatch served = new CountDownLatch(1);
        assertTrue(queue.submit("alice-1", "alice", served::countDown));
        assertTrue(served.await(10, TimeUnit.SECONDS), "another user waited for mallory's tasks");
        assertEquals(2, queue.running("mallory-1") + queue.running("mallory-2") + queue.running("mallory-3"),
                "mallory's applications together ran only the user's share");
        release.countDown();
        eventually(() -> queue.waiting("mallory-1") + queue.waiting("mallory-2") + queue.waiting("mallory-3") == 0
                && queue.running("mallory-1") + queue.running("mallory-2") + queue.running("mallory-3") == 0);
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void eventually(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "condition not reached within 10 s");
            Thread.sleep(10);
        }
    }
}
