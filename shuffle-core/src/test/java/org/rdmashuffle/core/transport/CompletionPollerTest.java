package org.rdmashuffle.core.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.software.SoftwareProvider;

/** The poller: it sleeps until woken, and nothing it still uses is freed under it at its queue's end. */
class CompletionPollerTest {

    @Test
    void aPollerThatOverstaysItsJoinHasNothingFreedUnderIt() throws Exception {
        CountDownLatch inHandler = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicReference<Object> afterClose = new AtomicReference<>();
        try (SoftwareProvider sp = new SoftwareProvider(SoftwareProvider.Config.loopback())) {
            VerbsContext ctx = sp.devices().getFirst().open();
            CompletionPoller poller = new CompletionPoller(ctx, "test-poller", 16, 4, Duration.ZERO, (wcs, n) -> {
                inHandler.countDown();
                try {
                    release.await();
                    afterClose.set(wcs.wrId(0)); // the batch it was handed is still readable
                } catch (RuntimeException | InterruptedException e) {
                    afterClose.set(e);
                }
            });
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            QueuePair a = pd.createQueuePair(QueuePairConfig.of(poller.completionQueue(), 4, 4, 1));
            QueuePair b = pd.createQueuePair(QueuePairConfig.of(poller.completionQueue(), 4, 4, 1));
            MemoryRegion mr = pd.allocateAndRegister(64, Access.LOCAL_WRITE | Access.REMOTE_READ);
            ConnectOptions o = ConnectOptions.defaults(1, 0, Mtu.MTU_1024);
            a.connect(b.localEndpoint(o), o);
            b.connect(a.localEndpoint(o), o);
            poller.start();
            try (SendWorkRequests wr = SendWorkRequests.allocate(1, 1)) {
                wr.get(0).rdmaRead(77, SendFlags.SIGNALED, mr, 0, 8, mr.address() + 32, mr.rkey());
                a.postSend(wr, 1);
            }
            assertTrue(inHandler.await(10, TimeUnit.SECONDS), "no completion");
            a.close();
            b.close();
            poller.close(); // the thread is stuck in its handler past the join
            release.countDown();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (afterClose.get() == null && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertEquals(77L, afterClose.get(), "the handler's batch was freed under it: " + afterClose.get());
            mr.close();
            pd.close();
            ctx.close();
        }
    }

    /**
     * An idle poller sleeps until woken: nothing wakes it by itself, the timer's nudge (against a lost
     * event) does only once it has slept longer than asked, and stop ends it at once.
     */
    @Test
    void anIdlePollerSleepsUntilWoken_andTheTimersNudgeWakesItOnlyPastItsBound() throws Exception {
        try (SoftwareProvider sp = new SoftwareProvider(SoftwareProvider.Config.loopback())) {
            VerbsContext ctx = sp.devices().getFirst().open();
            CompletionPoller poller = new CompletionPoller(ctx, "test-poller", 16, 4, Duration.ZERO, (wcs, n) -> { });
            poller.start();
            Thread.sleep(1500); // a timed sleep of a second would have ended, and slept again, by now
            assertEquals(1, poller.sleeps(), "the idle poller went to sleep once and stayed asleep");
            poller.wakeIfAsleepLongerThan(TimeUnit.HOURS.toNanos(1), System.nanoTime());
            Thread.sleep(300);
            assertEquals(1, poller.sleeps(), "woken though it had slept less than the bound");
            poller.wakeIfAsleepLongerThan(TimeUnit.MILLISECONDS.toNanos(500), System.nanoTime());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (poller.sleeps() == 1 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertEquals(2, poller.sleeps(), "the nudge did not wake a poller asleep past the bound (it polls, then sleeps again)");
            long stopping = System.nanoTime();
            poller.close();
            assertTrue(System.nanoTime() - stopping < TimeUnit.SECONDS.toNanos(2), "close waited on the sleep");
            ctx.close();
        }
    }
}
