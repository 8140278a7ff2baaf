package org.rdmashuffle.benchmarks;

import java.util.function.BooleanSupplier;

/**
 * A daemon thread that takes one reading a period until it is stopped: what the benchmarks' resource
 * and CPU samplers share (each reads /proc once a second while a run lasts). The first reading is taken
 * on the caller's thread by {@link #start}, so a run shorter than a period still has one; a sampler
 * that wants a last reading takes it after {@link #stop}.
 *
 * <p>Threads: {@code sample} runs on the caller's thread once, then on this sampler's thread only;
 * {@link #close} and {@link #stop} may be called from any thread.
 */
public final class PeriodicSampler implements AutoCloseable {
    private final Thread thread;
    private volatile boolean stopped;

    private PeriodicSampler(String name, long periodMs, Runnable sample, BooleanSupplier more) {
        this.thread = Thread.ofPlatform().daemon().name(name).unstarted(() -> {
            while (!stopped && more.getAsBoolean()) {
                try {
                    Thread.sleep(periodMs);
                } catch (InterruptedException e) {
                    return;
                }
                sample.run();
            }
        });
    }

    /**
     * Takes a reading now, then one every {@code periodMs} on thread {@code name} while {@code more}
     * holds (checked before each period) and until stopped.
     */
    public static PeriodicSampler start(String name, long periodMs, Runnable sample, BooleanSupplier more) {
        PeriodicSampler s = new PeriodicSampler(name, periodMs, sample, more);
        sample.run();
        s.thread.start();
        return s;
    }

    /** As above, sampling until stopped. */
    public static PeriodicSampler start(String name, long periodMs, Runnable sample) {
        return start(name, periodMs, sample, () -> true);
    }

    /** Stops sampling and waits up to {@code waitMs} for a reading under way to end. */
    public void stop(long waitMs) throws InterruptedException {
        close();
        thread.join(waitMs);
    }

    /** Stops sampling (the thread ends within a period, at once if it sleeps). */
    @Override
    public void close() {
        stopped = true;
        thread.interrupt();
    }
}
