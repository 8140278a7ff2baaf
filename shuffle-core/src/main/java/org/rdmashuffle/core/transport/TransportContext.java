package org.rdmashuffle.core.transport;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.protocol.MessageCodec;
import org.rdmashuffle.verbs.AsyncEvent;
import org.rdmashuffle.verbs.SharedReceiveQueue;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsProvider;
import org.rdmashuffle.verbs.WorkCompletionStatus;

/**
 * What the fetching and the serving side share, as Spark's network-common {@code TransportContext}
 * does: the device context and what was probed of it ({@link DeviceProfile}), the completion pollers
 * with the {@link CompletionRouter} they feed, the {@link ConnectionTable}, the {@link MetadataSender},
 * the queue-pair factory, the timer, the device's async events, and the lifecycle lock that keeps a
 * queue-pair set-up from outliving the device resources it is made on. It knows tenants only as
 * device resources ({@link TenantIndex}); what a connection means is its {@link ConnectionHandler}'s.
 *
 * <p>Lifecycle: made (the device opened and probed, nothing running), {@link #start}ed once the
 * tenants exist, then closed in phases by the engine between its services' own ({@link #stopTimer},
 * {@link #awaitTimer}, {@link #quiesce}, {@link #stopPollers}, {@link #closeDevice}, {@link
 * #release}), so nothing native is called after the device context is destroyed. Threads: its timer
 * ({@code rdma-shuffle-timer}), pollers and async-event thread, all daemons.
 */
public final class TransportContext {
    private static final System.Logger LOG = System.getLogger(TransportContext.class.getName());
    /** The period of the engine's periodic checks (late sends, fetch timeouts, idle connections) while they have work. */
    static final java.time.Duration TICK = java.time.Duration.ofMillis(200);
    private static final long TICK_NANOS = TICK.toNanos();
    /** A poller asleep this long while a tick runs is woken to poll its queue: the bound on a lost completion event. */
    private static final long LOST_EVENT_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(1);
    /** What a {@link Check} returns when it has nothing to watch until new work {@linkplain #armTick arms} the tick. */
    public static final long IDLE = Long.MAX_VALUE;
    /** {@link #nextTickAt} while a tick runs (or before {@link #start}): arms only leave {@link #wanted} for it. */
    private static final long RUNNING = Long.MIN_VALUE;
    private final java.util.List<Check> ticks = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** When the scheduled tick runs (nanoTime), {@link #IDLE} if none is, {@link #RUNNING} while one runs. */
    private final AtomicLong nextTickAt = new AtomicLong(RUNNING);
    /** Work was created while a tick ran: it looks again before it lets the timer sleep. */
    private final java.util.concurrent.atomic.AtomicBoolean wanted = new java.util.concurrent.atomic.AtomicBoolean();
    /** Guards scheduling and replacing the one pending tick (the slow path; arming is lock-free when one is due soon enough). */
    private final Object tickLock = new Object();
    private java.util.concurrent.ScheduledFuture<?> pendingTick;
    private final AtomicLong ticksRun = new AtomicLong();

    /**
     * A periodic check of the engine's timer: does what is due at {@code now} (nanoTime) and says when
     * it next needs to run: a nanoTime (at most every {@link #TICK}; {@code now} or earlier: the next
     * tick), or {@link #IDLE} when it has nothing to watch. Whatever gives it work later arms the tick
     * ({@link #armTick}, {@link #tickBy}), so an idle engine's timer sleeps.
     */
    @FunctionalInterface
    public interface Check {
        long run(long now);
    }

    /** The live tenants' device resources, by the index receive wr_ids carry. */
    public interface TenantIndex {
        /** Null once the tenant is gone: its late completions are dropped. */
        TenantDomain domainByIndex(int index);

        List<TenantDomain> domains();
    }

    private final VerbsProvider provider;
    private final VerbsContext context;
    private final DeviceProfile profile;
    private final CompletionPoller[] pollers;
    private final CompletionRouter router;
    /** The memlock limit the engine started under (-1: nothing limits what it pins), read once. */
    private final long pinnableBytes;
    private final QueuePairFactory queuePairs;
    private final ConnectionTable connections;
    private final MetadataSender sender;
    private final AtomicLong ids = new AtomicLong();
    private final ScheduledThreadPoolExecutor timer;
    /**
     * Queue-pair set-up (either side) holds the read lock; close takes the write lock before it frees
     * device resources, so no set-up creates a QP on a destroyed PD.
     */
    private final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();
    private final AtomicLong lowWaterEvents = new AtomicLong();
    /** How long the close waits for queue-pair set-ups under way: each ends (or fails) within the connect timeout. */
    private final long waitForSetUpsMillis;
    private volatile TenantIndex tenants;
    private volatile AsyncEventWatcher asyncEvents;
    private volatile boolean closed;

    /**
     * Opens the device {@code config} names (or the one carrying its bind address) and probes it.
     *
     * @param passiveServing serving queue pairs never dial (a node's service: reducers dial it)
     * @param sendDeadlineMillis how long a metadata send may wait for its completion before its connection fails
     */
    public TransportContext(EngineConfig config, VerbsProvider provider, boolean passiveServing, long sendDeadlineMillis) {
        this.provider = provider;
        this.waitForSetUpsMillis = config.connectTimeout().toMillis() + 2000;
        this.context = DeviceSetup.open(provider, config.device(), config.bindAddress());
        List<AutoCloseable> made = new ArrayList<>();
        try {
            this.pinnableBytes = provider.pinnableBytes();
            this.profile = DeviceProfile.probe(config, context, pinnableBytes);
            int decodeBound = config.receiveBufferSize();
            ThreadLocal<MessageCodec> codec = ThreadLocal.withInitial(() -> new MessageCodec(decodeBound));
            this.connections = new ConnectionTable(this::forgetSends);
            this.timer = new ScheduledThreadPoolExecutor(1, r -> Thread.ofPlatform().daemon()
                    .name("rdma-shuffle-timer").unstarted(r));
            timer.setRemoveOnCancelPolicy(true);
            made.add(timer::shutdownNow);
            this.sender = new MetadataSender(ids, codec, new MetadataSender.Listener() {
                @Override
                public void connectionFailed(DataConnection c, Throwable cause) {
                    if (!c.markFailureReported()) {
                        return; // its other sends failing (a flush): one timer task per connection, not per send
                    }
                    // Not inline: a sender may be a fetcher holding its lock, and failing a connection takes
                    // its fetcher's lock (another fetcher's, or a re-entry into its own).
                    try {
                        timer.execute(() -> c.handler().onFailure(c, cause));
                    } catch (RejectedExecutionException closing) {
                        c.handler().onFailure(c, cause); // the engine is closing: nobody sends now
                    }
                }

                @Override
                public void retire(DataConnection c) {
                    connections.retire(c);
                }
            }, sendDeadlineMillis, this::tickBy);
            this.router = new CompletionRouter(i -> tenants.domainByIndex(i), connections, sender, codec,
                    config.receiveBufferSize(), new FailedCompletions(profile.gid(), context.device().name(),
                            profile.options().portNumber(), profile.options().mtu().bytes()));
            this.pollers = new CompletionPoller[config.pollerThreads()];
            for (int i = 0; i < pollers.length; i++) {
                pollers[i] = new CompletionPoller(context, "rdma-shuffle-poller-" + i, profile.cqEntries(), 64,
                        config.busyPollOn(provider), provider.completesOnItsOwnThreads(), router);
                made.add(pollers[i]::close);
            }
            this.queuePairs = new QueuePairFactory(pollers, profile.maxSendWr(), profile.servingSendWr(),
                    profile.maxReadSge(), config.postPath(), passiveServing, profile.windows().on());
        } catch (RuntimeException | Error e) {
            for (int i = made.size() - 1; i >= 0; i--) {
                try {
                    made.get(i).close();
                } catch (Exception suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            context.close();
            throw e;
        }
    }

    private void forgetSends(DataConnection c) {
        sender.forget(c);
    }

    /** Starts the pollers, the async-event watcher and the late-send check, routing receives to {@code tenants}' pools. */
    public void start(TenantIndex tenants) {
        this.tenants = tenants;
        for (CompletionPoller p : pollers) {
            p.start();
        }
        this.asyncEvents = new AsyncEventWatcher(context, new AsyncEventWatcher.Handler() {
            @Override
            public void receiveQueueLow(SharedReceiveQueue srq) {
                onReceiveQueueLow(srq);
            }

            @Override
            public void queuePairFailed(int qpNumber, AsyncEvent.Type type) {
                DataConnection c = connections.byQpNumber(qpNumber);
                if (c != null) { // the device put a queue pair in error: its connection fails like any other
                    c.handler().onFailure(c, new IOException("the device reported " + type + " on queue pair " + qpNumber));
                }
            }
        });
        everyTick(sender::failLateSends);
        // Pollers sleep until woken: a completion event gone missing is found on the ticks that work in flight
        // runs, as a timed sleep found it, while a poller with nothing in flight is never woken. Asks for no tick.
        everyTick(now -> {
            for (CompletionPoller p : pollers) {
                p.wakeIfAsleepLongerThan(LOST_EVENT_NANOS, now);
            }
            return IDLE;
        });
        // One timer wake-up for every periodic check, not one each: on a small shared machine each costs the
        // tasks CPU. And none while no check has work: the first tick looks at what was made before the start.
        nextTickAt.set(IDLE);
        armTick();
    }

    /**
     * Runs {@code check} on the timer from {@link #start}, with the engine's other checks, every {@link
     * #TICK} while it has work and then when it asks to ({@link Check}).
     */
    public void everyTick(Check check) {
        ticks.add(check);
    }

    /** Work a check watches was made: a tick runs within {@link #TICK}. Cheap and lock-free when one is due by then. */
    public void armTick() {
        tickBy(System.nanoTime() + TICK_NANOS);
    }

    /**
     * Work a check watches was made that needs looking at by {@code nanoTime} (a deadline): a tick runs
     * then at the latest. Lock-free when one is due by then (the common case: one call per send).
     */
    public void tickBy(long nanoTime) {
        if (!wanted.get()) {
            wanted.set(true); // seen by a tick under way, which then looks again before it lets the timer sleep
        }
        if (nextTickAt.get() <= nanoTime) {
            return; // one is due by then, or running (and sees wanted)
        }
        synchronized (tickLock) {
            long at = nextTickAt.get();
            if (at <= nanoTime) {
                return;
            }
            schedule(nanoTime);
        }
    }

    /** Under {@link #tickLock}: the one pending tick runs at {@code due}, replacing a later one. */
    private void schedule(long due) {
        nextTickAt.set(due);
        if (pendingTick != null) {
            pendingTick.cancel(false); // if it has begun it finds it is not the one due, and returns
        }
        try {
            pendingTick = timer.schedule(() -> tick(due), Math.max(0, due - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException closing) {
            pendingTick = null; // the engine is closing: no tick from now on
        }
    }

    private void tick(long due) {
        synchronized (tickLock) {
            if (nextTickAt.get() != due) {
                return; // replaced by a sooner one
            }
            nextTickAt.set(RUNNING);
            pendingTick = null;
        }
        ticksRun.incrementAndGet();
        wanted.set(false); // work made from here on is seen by the checks below, or makes this tick look again
        long now = System.nanoTime();
        long next = IDLE;
        for (Check check : ticks) {
            try {
                next = Math.min(next, check.run(now));
            } catch (RuntimeException | Error e) { // one check failing must not end the others' schedule
                LOG.log(System.Logger.Level.ERROR, "rdma-shuffle: a periodic check failed", e);
                next = now; // nor its own: it is looked at again next tick, as when it had work
            }
        }
        synchronized (tickLock) {
            if (next == IDLE) {
                nextTickAt.set(IDLE);
            } else {
                schedule(Math.max(next, System.nanoTime() + TICK_NANOS));
            }
        }
        if (wanted.get()) { // work made while the checks ran, which they may have missed: look again
            armTick();
        }
    }

    /** {@code nanoTime} plus {@code nanos} (not negative), short of {@link #IDLE} however long: a deadline for {@link Check}s. */
    public static long after(long nanoTime, long nanos) {
        long t = nanoTime + nanos;
        return t < nanoTime || t == IDLE ? IDLE - 1 : t;
    }

    /** Tests: the periodic ticks run since the start (an idle engine runs none). */
    public long ticksRun() {
        return ticksRun.get();
    }

    /** The shared receive queue of one tenant ran low: post every repost gathered so far, now, and re-arm it. */
    private void onReceiveQueueLow(SharedReceiveQueue srq) {
        lowWaterEvents.incrementAndGet();
        for (TenantDomain t : tenants.domains()) {
            if (t.srq() == srq) {
                synchronized (t.receivePool()) {
                    if (!t.isClosed()) {
                        t.receivePool().flush();
                        t.rearm();
                    }
                }
            }
        }
    }

    public VerbsProvider provider() {
        return provider;
    }

    public VerbsContext context() {
        return context;
    }

    public DeviceProfile profile() {
        return profile;
    }

    public QueuePairFactory queuePairs() {
        return queuePairs;
    }

    public ConnectionTable connections() {
        return connections;
    }

    public MetadataSender sender() {
        return sender;
    }

    /** A fresh id for a request or a chain; never repeats within the process's engine. */
    public long nextId() {
        return ids.incrementAndGet();
    }

    /** The engine's timer: ticks, delayed retires, fetch-buffer slabs; never a poller's work. */
    public ScheduledExecutorService timer() {
        return timer;
    }

    /** Tests: tasks waiting on the timer. */
    public int timerTasks() {
        return timer.getQueue().size();
    }

    /** Held (read) by every queue-pair set-up; the close waits for it before freeing device resources. */
    public Lock setUpLock() {
        return lifecycle.readLock();
    }

    /** Marks the transport closing; true for the first caller only. */
    public synchronized boolean markClosed() {
        if (closed) {
            return false;
        }
        closed = true;
        return true;
    }

    public boolean isClosed() {
        return closed;
    }

    public long lowWaterEvents() {
        return lowWaterEvents.get();
    }

    /** The memlock limit the engine started under, or -1 where nothing limits what it pins. */
    public long pinnableBytes() {
        return pinnableBytes;
    }

    /** Failed work completions by status, since start. */
    public java.util.Map<WorkCompletionStatus, Long> completionErrors() {
        return router.errors();
    }

    public long completions() {
        long n = 0;
        for (CompletionPoller p : pollers) {
            n += p.completed();
        }
        return n;
    }

    public long pollerSleeps() {
        long n = 0;
        for (CompletionPoller p : pollers) {
            n += p.sleeps();
        }
        return n;
    }

    // ------------------------------------------------------------------ close, in phases

    /** First phase: no timer task runs from now on (queued ones are dropped). */
    public void stopTimer() {
        timer.shutdownNow();
    }

    /** Waits (1 s at most) for the timer task under way (a fetch-buffer slab being registered), then stops the async events. */
    public void awaitTimer() {
        try {
            timer.awaitTermination(1, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        AsyncEventWatcher events = asyncEvents;
        if (events != null) {
            events.close();
        }
    }

    /** How long a close waits for queue-pair set-ups under way (the engine's, or one tenant's when its application stops). */
    public long waitForSetUpsMillis() {
        return waitForSetUpsMillis;
    }

    /**
     * Waits at most {@code waitMillis} for the queue-pair set-ups under way to end; true if they did,
     * and then no new one starts until {@link #release}. False: one outlived the wait, and the device
     * resources are left for the process's exit (logged).
     */
    public boolean quiesce(long waitMillis) {
        boolean quiet;
        try {
            quiet = lifecycle.writeLock().tryLock(waitMillis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            quiet = false;
        }
        if (!quiet) {
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: a queue-pair set-up is still under way after " + waitMillis
                    + " ms; the device resources are left for the process's exit");
        }
        return quiet;
    }

    /** The pollers stop taking completions (their CQs stay until {@link #closeDevice}). */
    public void stopPollers() {
        for (CompletionPoller p : pollers) {
            p.stop();
        }
    }

    /** Last phase, once every tenant is freed: the completion queues, then the device context. */
    public void closeDevice() {
        for (CompletionPoller p : pollers) {
            p.close();
        }
        context.close();
    }

    /** Closes it when nothing was built on it (an engine whose serving side failed to start): all phases at once. */
    public void closeAlone() {
        stopTimer();
        awaitTimer();
        stopPollers();
        closeDevice();
    }

    /** Ends {@link #quiesce}: set-ups waiting now find the engine closed. */
    public void release() {
        lifecycle.writeLock().unlock();
    }
}
