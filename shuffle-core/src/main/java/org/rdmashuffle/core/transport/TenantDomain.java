package org.rdmashuffle.core.transport;

import java.util.ArrayDeque;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.SharedReceiveQueue;
import org.rdmashuffle.verbs.VerbsContext;

/**
 * The device resources of one application ("tenant"): its own protection domain holding its queue
 * pairs, its shared receive queue and receive buffers, its send buffers, and what is built on the PD
 * above this layer and given to it to close ({@link #adopt}: the serving side's registry of map-output
 * regions). What the tenant's outputs are, and their bounds, are the serving side's
 * ({@code server.ServedTenant}); this class knows only device resources. A queue pair of one application therefore cannot name another's memory: the NIC checks
 * that an rkey belongs to the queue pair's PD before it reads, so even a guessed or stolen rkey gets a
 * remote access error. An executor's engine has one tenant (its own application); a node's shuffle
 * service one per application it serves, made at the application's first output or connection and
 * closed when the application ends.
 *
 * <p>Shared by all tenants: the device context, the pollers and their completion queues (a CQ belongs
 * to the context, not to a PD), threads and the control plane. A tenant adds memory only.
 *
 * <p>Close order (rdma-core's pyverbs PD.close): closed to new queue-pair set-ups (those under way
 * waited for), then its connections retired (their QPs: ibv_destroy_srq fails with EBUSY while a QP
 * uses the SRQ); then the SRQ, the adopted children (their regions), the receive and send buffers,
 * and last the PD. One step failing does not keep the others from being attempted.
 */
public final class TenantDomain implements AutoCloseable {
    /** Receive wr_ids carry the tenant's index above the slot, so a completion finds its pool. */
    private static final int SLOT_BITS = 32;

    private final int index;
    private final String app;
    private final String user;
    private final ProtectionDomain pd;
    private final MemoryRegistration registration;
    private final SharedReceiveQueue srq;
    private final ReceivePool receivePool;
    private final SendBufferPool sendPool;
    /** What was built on the PD above this layer, closed after the SRQ and before the pools; guarded by itself. */
    private final java.util.List<Child> children = new java.util.ArrayList<>();
    private final int srqLimit;
    private final Set<DataConnection> connections = ConcurrentHashMap.newKeySet();
    /** Sends waiting for one of this tenant's send slots; guarded by itself, as is {@link #queuedBytes}. */
    final ArrayDeque<MetadataSender.QueuedSend> queuedSends = new ArrayDeque<>();
    long queuedBytes;
    /**
     * Queue-pair set-ups on this tenant's PD hold the read lock; the tenant's close takes the write lock
     * (bounded), so no set-up creates a queue pair on a PD being freed.
     */
    private final java.util.concurrent.locks.ReentrantReadWriteLock setUps = new java.util.concurrent.locks.ReentrantReadWriteLock();
    private volatile boolean closed;
    /** Completes when every device resource of the tenant is freed; exceptionally if some are left. */
    private final java.util.concurrent.CompletableFuture<Void> freed = new java.util.concurrent.CompletableFuture<>();

    /**
     * @param index never reused while the engine runs (late completions of a closed tenant are ignored)
     * @param user the application's user: whose share of the node it draws on
     */
    public TenantDomain(VerbsContext context, int index, String app, String user, EngineConfig config,
                        MemoryRegistration registration) {
        this.index = index;
        this.registration = registration;
        this.app = app;
        this.user = user;
        this.pd = context.allocateProtectionDomain();
        SharedReceiveQueue q = null;
        ReceivePool receives = null;
        SendBufferPool sends = null;
        try {
            q = pd.createSharedReceiveQueue(config.receiveBuffers(), 1, 0);
            receives = new ReceivePool(pd, q, config.receiveBuffers(), config.receiveBufferSize(), config.receiveLowWater(),
                    Math.max(1, config.receiveBuffers() / 8), (long) index << SLOT_BITS, registration);
            // The device tells us (SRQ_LIMIT_REACHED) when fewer than this many receives remain posted.
            this.srqLimit = Math.max(1, config.receiveLowWater());
            q.armLimit(srqLimit);
            sends = new SendBufferPool(pd, config.sendBuffers(), config.receiveBufferSize(), registration);
        } catch (RuntimeException | Error e) {
            closeQuietly(sends, e);
            closeQuietly(receives, e);
            closeQuietly(q, e);
            closeQuietly(pd, e);
            throw e;
        }
        this.srq = q;
        this.receivePool = receives;
        this.sendPool = sends;
    }

    /** Something built on this tenant's PD above this layer: closed, asynchronously, when the tenant closes. */
    @FunctionalInterface
    public interface Child {
        /** Frees what it holds of the PD; completes when it has (a registration under way is waited for). */
        java.util.concurrent.CompletableFuture<Void> closeAsync();
    }

    /** Gives {@code child} to the tenant to close, after its SRQ and before its pools and PD. */
    public void adopt(Child child) {
        synchronized (children) {
            children.add(child);
        }
    }

    private static void closeQuietly(AutoCloseable c, Throwable into) {
        if (c != null) {
            try {
                c.close();
            } catch (Exception e) {
                into.addSuppressed(e);
            }
        }
    }

    /** The tenant a receive completion's wr_id value belongs to. */
    public static int tenantOf(long receiveValue) {
        return (int) (receiveValue >>> SLOT_BITS);
    }

    public int index() {
        return index;
    }

    /** The application (the empty name in an executor's engine: its own). */
    public String app() {
        return app;
    }

    /** The application's user: whose share of the node's resources the tenant draws on. */
    public String user() {
        return user;
    }

    /**
     * Enters a queue-pair set-up on this tenant's PD; false if the tenant is closing (its application
     * stopped). The caller ends it with {@link #endSetUp()}.
     */
    public boolean beginSetUp() {
        if (!setUps.readLock().tryLock()) {
            return false; // a close holds, or waits for, the write lock
        }
        if (closed) {
            setUps.readLock().unlock();
            return false;
        }
        return true;
    }

    public void endSetUp() {
        setUps.readLock().unlock();
    }

    public ProtectionDomain pd() {
        return pd;
    }

    /** How memory on this PD is registered: pinned or on demand (the engine's one choice). */
    public MemoryRegistration registration() {
        return registration;
    }

    public SharedReceiveQueue srq() {
        return srq;
    }

    /** Its receive buffers: lock on the pool itself to use it (pollers and the async-event thread share it). */
    public ReceivePool receivePool() {
        return receivePool;
    }

    public SendBufferPool sendPool() {
        return sendPool;
    }

    /** Re-arms the SRQ limit event after its receives were flushed. */
    public void rearm() {
        if (!closed) {
            srq.armLimit(srqLimit);
        }
    }

    /** Connections on this tenant's PD; the engine retires them before {@link #close()}. */
    public Set<DataConnection> connections() {
        return connections;
    }

    public boolean isClosed() {
        return closed;
    }

    /**
     * Frees everything in the order verbs requires, the tenant having no connection (a tenant that
     * never served, or whose connections the engine retired). Waits for registrations under way (its
     * children's close).
     */
    @Override
    public void close() {
        closeAsync(Long.MAX_VALUE, c -> {
            throw new IllegalStateException(c + " is still open: " + this + " is closed with its connections retired first");
        }).join();
    }

    /** Runs {@code r} once the tenant's device resources are all freed (its PD gone); not if they are left. */
    public void whenFreed(Runnable r) {
        freed.thenRun(r);
    }

    /**
     * As {@link #close()}, bounded, retiring its connections: first it closes to new queue-pair set-ups
     * and waits at most {@code waitMillis} for those under way to end, so that every connection on
     * its PD is in {@link #connections()}; then it retires them ({@code retire}: their QPs destroyed),
     * then frees its SRQ and regions; the receive and send buffers and the PD go once no registration
     * is under way any more (ibv_reg_mr cannot be interrupted), on whichever thread ends the last one.
     * Each step is attempted whatever the ones before did: the first failure is what the future
     * completes with, the others suppressed in it. The future completes when everything is freed, or
     * exceptionally (the PD left for the process's exit) if a set-up outlived the wait (its connections
     * retired all the same) or a step failed.
     */
    public java.util.concurrent.CompletableFuture<Void> closeAsync(long waitMillis,
                                                                     java.util.function.Consumer<DataConnection> retire) {
        synchronized (receivePool) {
            if (closed) {
                return java.util.concurrent.CompletableFuture.completedFuture(null); // its first close frees it
            }
            closed = true; // no set-up begins from now on
        }
        boolean quiet;
        try {
            quiet = setUps.writeLock().tryLock(waitMillis, java.util.concurrent.TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            quiet = false;
        }
        CloseSteps failures = new CloseSteps();
        // With set-ups over, every queue pair on the PD is a connection here: none is added after this.
        for (DataConnection c : new java.util.ArrayList<>(connections)) {
            failures.attempt(() -> retire.accept(c));
        }
        if (!quiet) {
            IllegalStateException late = new IllegalStateException(this + ": a queue-pair set-up on its protection domain outlived "
                    + waitMillis + " ms; its device resources are left for the process's exit");
            if (failures.first() != null) {
                late.addSuppressed(failures.first());
            }
            freed.completeExceptionally(late);
            return freed.thenApply(x -> null);
        }
        failures.attempt(srq::close);
        java.util.List<java.util.concurrent.CompletableFuture<Void>> ended = new java.util.ArrayList<>();
        synchronized (children) {
            for (Child child : children) {
                try {
                    ended.add(child.closeAsync());
                } catch (RuntimeException | Error e) {
                    ended.add(java.util.concurrent.CompletableFuture.failedFuture(e));
                }
            }
        }
        // Every child's close ends (allOf waits for all, failed or not) before the pools and the PD are attempted.
        java.util.concurrent.CompletableFuture.allOf(ended.toArray(java.util.concurrent.CompletableFuture[]::new))
                .whenComplete((ok, anyFailed) -> {
                    for (java.util.concurrent.CompletableFuture<Void> child : ended) { // each child's failure, not only one
                        if (child.isCompletedExceptionally()) {
                            failures.add(child.exceptionNow());
                        }
                    }
                    failures.attempt(() -> {
                        synchronized (receivePool) {
                            receivePool.close();
                        }
                    });
                    failures.attempt(sendPool::close);
                    failures.attempt(pd::close);
                    Throwable first = failures.first();
                    if (first == null) {
                        freed.complete(null);
                    } else {
                        freed.completeExceptionally(first);
                    }
                });
        return freed.thenApply(x -> null);
    }

    @Override
    public String toString() {
        return "tenant " + index + (app.isEmpty() ? " (own outputs)" : " (" + app + ")");
    }
}
