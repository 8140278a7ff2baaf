package org.rdmashuffle.core.server;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * Work for a small pool of threads (fetch requests that need a disk search or a registration; control
 * requests that set up queue pairs), taken round-robin across applications: one application flooding
 * the service waits behind its own work, while another's next task runs after at most one task of
 * each busy application. Bounded twice per application: at most {@code waitingPerApplication} tasks
 * waiting (beyond that {@link #submit} refuses and the caller answers "busy"), and at most
 * {@code runningPerApplication} running at once, so tasks of one application that block (a dial to a
 * peer that never answers) cannot hold every thread. Thread-safe.
 */
public final class FairServerQueue {
    private static final System.Logger LOG = System.getLogger(FairServerQueue.class.getName());
    private final Executor threads;
    private final int waitingPerApplication;
    private final int runningPerApplication;
    private final Map<Object, Tenant> tenants = new HashMap<>();
    /** Applications with waiting work and room to run more, in the order they get their next turn. */
    private final ArrayDeque<Tenant> turns = new ArrayDeque<>();

    private static final class Tenant {
        final Object application;
        final ArrayDeque<Runnable> waiting = new ArrayDeque<>();
        int running;
        boolean hasTurn;

        Tenant(Object application) {
            this.application = application;
        }
    }

    /** Unbounded running per application: for pools where no task blocks on a peer. */
    public FairServerQueue(Executor threads, int waitingPerApplication) {
        this(threads, waitingPerApplication, Integer.MAX_VALUE);
    }

    /** @param threads runs the queue's turns (a fixed pool; one turn is asked of it per task submitted) */
    public FairServerQueue(Executor threads, int waitingPerApplication, int runningPerApplication) {
        if (waitingPerApplication < 1 || runningPerApplication < 1) {
            throw new IllegalArgumentException("bounds must be positive: " + waitingPerApplication + " waiting, "
                    + runningPerApplication + " running");
        }
        this.threads = threads;
        this.waitingPerApplication = waitingPerApplication;
        this.runningPerApplication = runningPerApplication;
    }

    /** Queues {@code task} for {@code application}; false (nothing queued) if it already has its share waiting. */
    public boolean submit(Object application, Runnable task) {
        synchronized (this) {
            Tenant t = tenants.computeIfAbsent(application, Tenant::new);
            if (t.waiting.size() >= waitingPerApplication) {
                return false;
            }
            t.waiting.add(task);
            offerTurn(t);
        }
        try {
            threads.execute(this::runTurns);
        } catch (RejectedExecutionException closing) {
            // shutting down: the task is dropped with the queue
        }
        return true;
    }

    /** Under the lock: gives {@code t} a turn if it has work waiting and room to run it. */
    private void offerTurn(Tenant t) {
        if (!t.hasTurn && !t.waiting.isEmpty() && t.running < runningPerApplication) {
            t.hasTurn = true;
            turns.add(t);
        }
    }

    /**
     * Runs tasks, each of the application whose turn it is, until no application may run one. A thread
     * that finishes a task looks again: the task's end may have given its application room to run the
     * next, whose own turn request may already have found nothing to do.
     */
    private void runTurns() {
        while (true) {
            Tenant t;
            Runnable task;
            synchronized (this) {
                t = turns.poll();
                if (t == null) {
                    return;
                }
                t.hasTurn = false;
                task = t.waiting.poll();
                t.running++;
                offerTurn(t);
            }
            try {
                task.run();
            } catch (RuntimeException e) {
                // Keep turning: a waiting task of this application may have no other thread to run it.
                LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: a task of " + t.application + " failed", e);
            } finally {
                synchronized (this) {
                    t.running--;
                    if (t.running == 0 && t.waiting.isEmpty()) {
                        tenants.remove(t.application);
                    } else {
                        offerTurn(t);
                    }
                }
            }
        }
    }

    /** Tasks waiting for {@code application}. */
    public synchronized int waiting(Object application) {
        Tenant t = tenants.get(application);
        return t == null ? 0 : t.waiting.size();
    }

    /** Tasks of {@code application} running now. */
    public synchronized int running(Object application) {
        Tenant t = tenants.get(application);
        return t == null ? 0 : t.running;
    }
}
