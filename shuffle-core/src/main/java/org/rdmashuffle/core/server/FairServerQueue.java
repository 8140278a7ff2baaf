package org.rdmashuffle.core.server;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * Work for the server threads (fetch requests that need a disk search or a registration), taken
 * round-robin across applications: one application flooding the service with requests waits behind
 * its own, while another's next request runs after at most one task of each busy application. Each
 * application may have at most {@code perApplication} tasks waiting; beyond that {@link #submit}
 * refuses, and the caller answers "busy". Thread-safe.
 */
public final class FairServerQueue {
    private final Executor threads;
    private final int perApplication;
    private final Map<Object, ArrayDeque<Runnable>> waiting = new HashMap<>();
    /** Applications with waiting work, in the order they get their next turn. */
    private final ArrayDeque<Object> turns = new ArrayDeque<>();

    /** @param threads runs one {@link #runOne} per task submitted (a fixed pool of server threads) */
    public FairServerQueue(Executor threads, int perApplication) {
        this.threads = threads;
        this.perApplication = perApplication;
    }

    /** Queues {@code task} for {@code application}; false (nothing queued) if it already has its share waiting. */
    public boolean submit(Object application, Runnable task) {
        synchronized (this) {
            ArrayDeque<Runnable> q = waiting.computeIfAbsent(application, a -> new ArrayDeque<>());
            if (q.size() >= perApplication) {
                return false;
            }
            q.add(task);
            if (q.size() == 1) {
                turns.add(application);
            }
        }
        try {
            threads.execute(this::runOne); // one turn per task: the threads run exactly as many as are queued
        } catch (RejectedExecutionException closing) {
            // shutting down: the task is dropped with the queue
        }
        return true;
    }

    /** Runs the next task of the application whose turn it is. */
    private void runOne() {
        Runnable task;
        synchronized (this) {
            Object app = turns.poll();
            if (app == null) {
                return;
            }
            ArrayDeque<Runnable> q = waiting.get(app);
            task = q.poll();
            if (q.isEmpty()) {
                waiting.remove(app);
            } else {
                turns.add(app);
            }
        }
        task.run();
    }

    /** Tasks waiting for {@code application}. */
    public synchronized int waiting(Object application) {
        ArrayDeque<Runnable> q = waiting.get(application);
        return q == null ? 0 : q.size();
    }
}
