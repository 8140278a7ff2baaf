package org.rdmashuffle.core.server;

import java.util.ArrayDeque;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

import org.rdmashuffle.core.transport.TenantDomain;

/**
 * Ends stopped applications' tenants on a thread of its own, so that whoever stops an application
 * (YARN's dispatcher, through the NodeManager's auxiliary service) returns at once: ending a tenant
 * waits — bounded — for queue-pair set-ups on its protection domain (a dial takes up to the connect
 * timeout) and for registrations under way (ibv_reg_mr cannot be interrupted). The thread is a
 * daemon, started when a stop comes and gone when none waits. A tenant whose set-up outlived the wait
 * keeps its device resources until the process exits (logged); none is freed under a set-up.
 * Thread-safe.
 */
public final class ApplicationStops {
    private static final System.Logger LOG = System.getLogger(ApplicationStops.class.getName());

    /** How a tenant is ended: its connections retired, then its resources freed once no set-up is on it. */
    @FunctionalInterface
    public interface Ender {
        /** Completes when everything is freed (perhaps after registrations under way end), or exceptionally if it was left. */
        CompletableFuture<Void> end(TenantDomain tenant, long waitMillis);
    }

    private final Ender ender;
    private final long waitMillis;
    /** Guarded by itself. */
    private final ArrayDeque<TenantDomain> waiting = new ArrayDeque<>();
    /** Tenants queued or being ended, or whose last resources wait for a registration to end. */
    private final Set<TenantDomain> underWay = ConcurrentHashMap.newKeySet();
    private Thread thread;
    private boolean closed;

    /** @param waitMillis the longest a stop waits for a queue-pair set-up on the tenant's protection domain */
    public ApplicationStops(Ender ender, long waitMillis) {
        this.ender = ender;
        this.waitMillis = waitMillis;
    }

    /** Ends {@code tenant} (out of the engine's tables already) on the stopper thread; returns at once. */
    public void stop(TenantDomain tenant) {
        underWay.add(tenant);
        synchronized (waiting) {
            if (!closed) {
                waiting.add(tenant);
                if (thread == null) {
                    thread = Thread.ofPlatform().daemon().name("rdma-shuffle-stopper").start(this::run);
                }
                return;
            }
        }
        end(tenant); // the engine is closing: on the caller's thread
    }

    private void run() {
        while (true) {
            TenantDomain t;
            synchronized (waiting) {
                t = waiting.poll();
                if (t == null) {
                    thread = null;
                    return;
                }
            }
            end(t);
        }
    }

    private CompletableFuture<Void> end(TenantDomain t) {
        CompletableFuture<Void> done;
        try {
            done = ender.end(t, waitMillis);
        } catch (RuntimeException | Error e) {
            done = CompletableFuture.failedFuture(e);
        }
        return done.whenComplete((ok, failed) -> {
            underWay.remove(t);
            if (failed != null) {
                LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: ending " + t + ": " + failed.getMessage());
            }
        });
    }

    /** Stopped applications whose resources are not all freed yet. */
    public int underWay() {
        return underWay.size();
    }

    /**
     * Ends the tenants still waiting on the caller's thread (the engine is closing; later stops too);
     * the future completes when every stop under way, theirs and the stopper thread's, has freed all.
     */
    public CompletableFuture<Void> close() {
        java.util.List<TenantDomain> left;
        synchronized (waiting) {
            closed = true;
            left = new java.util.ArrayList<>(waiting);
            waiting.clear();
        }
        left.forEach(this::end);
        return CompletableFuture.runAsync(() -> {
            while (!underWay.isEmpty()) {
                try {
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }, r -> Thread.ofVirtual().name("rdma-shuffle-stops-closing").start(r));
    }
}
