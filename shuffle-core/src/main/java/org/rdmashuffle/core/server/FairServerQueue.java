package org.rdmashuffle.core.server;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * Work for a small pool of threads (fetch requests that need a disk search or a registration; control
 * requests that set up queue pairs; searches on disk), taken round-robin across applications: one
 * application flooding the service waits behind its own work, while another's next task runs after at
 * most one task of each busy application. Bounded per application: at most {@code waitingPerApplication}
 * tasks waiting (beyond that {@link #submit} refuses and the caller answers "busy"); and in what runs
 * at once, per application and per group (an application's user): tasks of one user that block (a dial
 * to a peer that never answers, a disk that hangs) cannot hold every thread, however many applications
 * the user runs. A task that throws anything is logged and the queue turns on. Thread-safe.
 */
public final class FairServerQueue {
    private static final System.Logger LOG = System.getLogger(FairServerQueue.class.getName());
    private final Executor threads;
    private final int waitingPerApplication;
    private final int runningPerApplication;
    private final int runningPerGroup;
    private final Map<Object, Tenant> tenants = new HashMap<>();
    private final Map<Object, Group> groups = new HashMap<>();
    /** Applications with waiting work and room to run more, in the order they get their next turn. */
    private final ArrayDeque<Tenant> turns = new ArrayDeque<>();
    private boolean closed;

    /** Applications that share a bound on running tasks (a user's). */
    private static final class Group {
        final Object key;
        int running;
        int tenants;
        /** Its applications with work waiting while the group runs all it may. */
        final Set<Tenant> blocked = new LinkedHashSet<>();

        Group(Object key) {
            this.key = key;
        }
    }

    private static final class Tenant {
        final Object application;
        final Group group;
        final ArrayDeque<Runnable> waiting = new ArrayDeque<>();
        int running;
        boolean hasTurn;

        Tenant(Object application, Group group) {
            this.application = application;
            this.group = group;
        }
    }

    /** Unbounded running: for pools where no task blocks on a peer or a disk. */
    public FairServerQueue(Executor threads, int waitingPerApplication) {
        this(threads, waitingPerApplication, Integer.MAX_VALUE, Integer.MAX_VALUE);
    }

    /** @param threads runs the queue's turns (a fixed pool; one turn is asked of it per task submitted) */
    public FairServerQueue(Executor threads, int waitingPerApplication, int runningPerApplication, int runningPerGroup) {
        if (waitingPerApplication < 1 || runningPerApplication < 1 || runningPerGroup < 1) {
            throw new IllegalArgumentException("bounds must be positive: " + waitingPerApplication + " waiting, "
                    + runningPerApplication + " running per application, " + runningPerGroup + " per group");
        }
        this.threads = threads;
        this.waitingPerApplication = waitingPerApplication;
        this.runningPerApplication = runningPerApplication;
        this.runningPerGroup = runningPerGroup;
    }

    /** Queues {@code task} for {@code application}, its own group; false (nothing queued) if it already has its share waiting. */
    public boolean submit(Object application, Runnable task) {
        return submit(application, application, task);
    }

    /** Queues {@code task} for {@code application} of {@code group}; false (nothing queued) if it has its share waiting. */
    public boolean submit(Object application, Object group, Runnable task) {
        synchronized (this) {
            Tenant t = tenants.get(application);
            if (t == null) {
                Group g = groups.computeIfAbsent(group, Group::new);
                t = new Tenant(application, g);
                g.tenants++;
                tenants.put(application, t);
            }
            if (closed || t.waiting.size() >= waitingPerApplication) {
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

    /** Under the lock: gives {@code t} a turn if it has work waiting and room to run it; parks it with its group if the group is full. */
    private void offerTurn(Tenant t) {
        if (t.hasTurn || t.waiting.isEmpty() || t.running >= runningPerApplication) {
            return;
        }
        if (t.group.running >= runningPerGroup) {
            t.group.blocked.add(t);
            return;
        }
        t.group.blocked.remove(t);
        t.hasTurn = true;
        turns.add(t);
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
                do {
                    t = closed ? null : turns.poll();
                    if (t == null) {
                        return;
                    }
                    t.hasTurn = false;
                    if (t.group.running >= runningPerGroup) { // filled since the turn was given: wait with the group
                        t.group.blocked.add(t);
                        t = null;
                    }
                } while (t == null);
                task = t.waiting.poll();
                t.running++;
                t.group.running++;
                offerTurn(t);
            }
            try {
                task.run();
            } catch (Throwable e) {
                // Keep turning: a waiting task of this application may have no other thread to run it.
                LOG.log(System.Logger.Level.ERROR, "rdma-shuffle: a task of " + t.application + " failed", e);
            } finally {
                synchronized (this) {
                    t.running--;
                    Group g = t.group;
                    g.running--;
                    if (t.running == 0 && t.waiting.isEmpty()) {
                        tenants.remove(t.application);
                        g.blocked.remove(t);
                        if (--g.tenants == 0) {
                            groups.remove(g.key);
                        }
                    } else {
                        offerTurn(t);
                    }
                    for (Tenant b : g.blocked.toArray(Tenant[]::new)) {
                        offerTurn(b);
                    }
                }
            }
        }
    }

    /** Drops every task waiting and takes no more: the threads end with the task they run (the owner is closing). */
    public synchronized void close() {
        closed = true;
        turns.clear();
        tenants.values().forEach(t -> t.waiting.clear());
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
