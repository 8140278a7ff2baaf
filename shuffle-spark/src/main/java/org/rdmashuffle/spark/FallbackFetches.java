package org.rdmashuffle.spark;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Where a block the engine could not carry is handed to Spark's transport: never on the engine's
 * completion poller, whose listener calls these come from. Spark's client may connect first, and
 * that connect is synchronous (up to {@code spark.network.timeout}): on the poller it would hold up
 * every completion of every peer behind it. A few daemon threads, a bounded queue; when the queue is
 * full the block fails at once rather than wait.
 */
final class FallbackFetches implements AutoCloseable {
    static final int THREADS = 4;
    static final int QUEUE = 4096;

    private final ThreadPoolExecutor threads;

    FallbackFetches() {
        AtomicInteger ids = new AtomicInteger();
        threads = new ThreadPoolExecutor(THREADS, THREADS, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(QUEUE),
                r -> Thread.ofPlatform().daemon().name("rdma-shuffle-fallback-" + ids.getAndIncrement()).unstarted(r));
        threads.allowCoreThreadTimeOut(true);
    }

    /** Runs {@code fetch} on a fallback thread, or returns why it cannot (queue full, closing). */
    RejectedExecutionException submit(Runnable fetch) {
        try {
            threads.execute(fetch);
            return null;
        } catch (RejectedExecutionException e) {
            return new RejectedExecutionException("the fallback to Spark's transport has " + QUEUE
                    + " fetches waiting already, or the executor is stopping", e);
        }
    }

    @Override
    public void close() {
        threads.shutdownNow();
    }
}
