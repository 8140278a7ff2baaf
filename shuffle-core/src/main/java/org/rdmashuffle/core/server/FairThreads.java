package org.rdmashuffle.core.server;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A small pool of daemon threads that takes its work through a {@link FairServerQueue}: round-robin
 * across applications, bounded in what waits per application and in what runs at once per
 * application and per user. A serving engine has three: its server threads (requests that need slow
 * work), its connector threads (control requests) and, on a service, its lookup threads (searches of
 * the node's disks). Threads start with work and end after 30 s idle. Owns its pool and queue.
 */
public final class FairThreads {
    private final ThreadPoolExecutor pool;
    private final FairServerQueue queue;

    /**
     * @param name the threads' name, numbered
     * @param waitingPerApplication tasks of one application that may wait; more are refused ("busy")
     * @param runningPerApplication tasks of one application running at once
     * @param runningPerUser tasks of one user's applications running at once
     */
    public FairThreads(String name, int threads, int waitingPerApplication, int runningPerApplication, int runningPerUser) {
        AtomicInteger ids = new AtomicInteger();
        // The pool's own queue holds one turn per task waiting: bounded by the fair queue's per-application bound.
        this.pool = new ThreadPoolExecutor(threads, threads, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
                r -> Thread.ofPlatform().daemon().name(name + "-" + ids.getAndIncrement()).unstarted(r));
        pool.allowCoreThreadTimeOut(true);
        this.queue = new FairServerQueue(pool, waitingPerApplication, runningPerApplication, runningPerUser);
    }

    /** Queues {@code task} for {@code application} of {@code user}; false (nothing queued) if it has its share waiting. */
    public boolean submit(Object application, Object user, Runnable task) {
        return queue.submit(application, user, task);
    }

    /** Drops what waits, interrupts what runs; returns at once. */
    public void close() {
        queue.close();
        pool.shutdownNow();
    }

    /** Waits at most {@code millis} for the running tasks to end (a registration cannot be interrupted). */
    public boolean awaitTermination(long millis) throws InterruptedException {
        return pool.awaitTermination(millis, TimeUnit.MILLISECONDS);
    }
}
