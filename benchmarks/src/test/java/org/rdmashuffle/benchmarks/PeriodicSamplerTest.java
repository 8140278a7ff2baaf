package org.rdmashuffle.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class PeriodicSamplerTest {
    @Test
    void takesAReadingAtOnce_thenOneAPeriod_andNoneAfterItStops() throws Exception {
        AtomicInteger readings = new AtomicInteger();
        CountDownLatch three = new CountDownLatch(3);
        PeriodicSampler s = PeriodicSampler.start("test-sampler", 10, () -> {
            readings.incrementAndGet();
            three.countDown();
        });
        assertTrue(readings.get() >= 1, "the first reading is taken on the caller's thread");
        assertTrue(three.await(10, TimeUnit.SECONDS), "readings kept coming");
        s.stop(5000);
        int atStop = readings.get();
        Thread.sleep(100);
        assertEquals(atStop, readings.get(), "a reading after the stop");
        assertFalse(Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().equals("test-sampler")),
                "its thread outlived the stop");
    }

    @Test
    void stopsOnItsOwnOnceItWantsNoMore() throws Exception {
        AtomicInteger readings = new AtomicInteger();
        PeriodicSampler s = PeriodicSampler.start("test-sampler-bounded", 5, readings::incrementAndGet, () -> readings.get() < 4);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().equals("test-sampler-bounded"))) {
            assertTrue(System.nanoTime() < deadline, "the sampler kept running past what it wanted");
            Thread.sleep(10);
        }
        assertEquals(4, readings.get());
        s.close();
    }
}
