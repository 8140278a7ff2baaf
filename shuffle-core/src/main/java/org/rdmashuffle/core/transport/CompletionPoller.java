package org.rdmashuffle.core.transport;

import java.time.Duration;

import org.rdmashuffle.verbs.CompletionChannel;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.WorkCompletions;

/**
 * One completion queue and the daemon thread that drains it. It polls in batches and hands each
 * batch to the handler; when the queue runs dry it keeps polling for {@code busyPoll} (a completion
 * that arrives within microseconds is taken without a wake-up), then arms the queue and sleeps on its
 * completion channel, so an idle process burns no CPU. It sleeps until an event or a wake-up: {@link
 * #stop()} wakes the channel (a wake-up is kept until taken, on both providers), and a completion event
 * that never came is the engine's timer's to find, while it runs for work in flight ({@link
 * #wakeIfAsleepLongerThan}); so an idle poller does not wake at all (on a small shared machine every
 * timed wake-up costs the tasks CPU, issues 37 and 52).
 */
public final class CompletionPoller {
    /** Completions dispatched by the thread that polled them; called with nothing locked. */
    @FunctionalInterface
    public interface Handler {
        void handle(WorkCompletions completions, int count);
    }

    /** A sleep on the channel: in effect until an event or a wake-up (a finite figure every provider's wait takes). */
    static final Duration SLEEP = Duration.ofDays(1);
    /** How long {@link #stop()} waits for the thread: a handler under way, or one sleep if the wake-up is lost. */
    private static final Duration STOP_WAIT = Duration.ofSeconds(2);
    private static final System.Logger LOG = System.getLogger(CompletionPoller.class.getName());

    private final CompletionChannel channel;
    private final CompletionQueue cq;
    private final WorkCompletions completions;
    private final long busyPollNanos;
    /**
     * Whether the provider's own threads produce the completions (the software provider): then the
     * busy poll yields the core to them instead of spinning against them, which on a machine with
     * few cores held back the very completions it waited for.
     */
    private final boolean yieldWhileBusy;
    private final Handler handler;
    private final Thread thread;
    private volatile boolean running = true;
    /** Guards every native call on the queue and channel against {@link #close()}: none after it. */
    private final Object nativeCalls = new Object();
    private boolean destroyed;
    private volatile long sleeps;
    /** When the thread went to sleep on the channel (nanoTime); 0 while it is awake. */
    private volatile long asleepSince;
    private volatile long completed;

    public CompletionPoller(VerbsContext context, String name, int cqEntries, int batch, Duration busyPoll, Handler handler) {
        this(context, name, cqEntries, batch, busyPoll, false, handler);
    }

    public CompletionPoller(VerbsContext context, String name, int cqEntries, int batch, Duration busyPoll,
                            boolean yieldWhileBusy, Handler handler) {
        this.yieldWhileBusy = yieldWhileBusy;
        this.busyPollNanos = busyPoll.toNanos();
        this.handler = handler;
        this.channel = context.createCompletionChannel();
        try {
            this.cq = context.createCompletionQueue(cqEntries, channel, 0);
        } catch (RuntimeException e) {
            channel.close();
            throw e;
        }
        this.completions = WorkCompletions.allocate(batch);
        this.thread = Thread.ofPlatform().daemon().name(name).unstarted(this::run);
    }

    public CompletionQueue completionQueue() {
        return cq;
    }

    public void start() {
        thread.start();
    }

    private void run() {
        long idleSince = 0;
        while (running) {
            try {
                int n = poll();
                if (n < 0) {
                    return; // destroyed
                }
                if (n > 0) {
                    dispatch(n);
                    idleSince = 0;
                    continue;
                }
                long now = System.nanoTime();
                if (idleSince == 0) {
                    idleSince = now;
                }
                if (now - idleSince < busyPollNanos) {
                    if (yieldWhileBusy) {
                        Thread.yield();
                    } else {
                        Thread.onSpinWait();
                    }
                    continue;
                }
                n = armAndPoll(); // one that arrived before the arm raises no event
                if (n < 0) {
                    return;
                }
                if (n > 0) {
                    dispatch(n);
                    idleSince = 0;
                    continue;
                }
                if (!sleep()) {
                    return;
                }
                idleSince = 0;
            } catch (RuntimeException | Error e) { // the loop is every connection's: it goes on
                if (running) {
                    LOG.log(System.Logger.Level.ERROR, thread.getName() + ": polling failed; continuing", e);
                }
            }
        }
    }

    /** Completions polled, or -1 once the queue is destroyed. */
    private int poll() {
        synchronized (nativeCalls) {
            return destroyed ? -1 : cq.poll(completions);
        }
    }

    private int armAndPoll() {
        synchronized (nativeCalls) {
            if (destroyed) {
                return -1;
            }
            cq.requestNotify(false);
            return cq.poll(completions);
        }
    }

    /** Sleeps on the channel until an event or a wake-up; false once destroyed. */
    private boolean sleep() {
        synchronized (nativeCalls) {
            if (destroyed) {
                return false;
            }
            asleepSince = System.nanoTime() | 1; // never 0
            sleeps++; // as it goes to sleep: a poller asleep until woken is seen asleep at once
            try {
                CompletionQueue woke = channel.awaitEvent(SLEEP);
                if (woke != null) {
                    woke.acknowledgeEvents(1);
                }
            } finally {
                asleepSince = 0;
            }
            return true;
        }
    }

    /**
     * Wakes the thread if it has slept on its channel for more than {@code nanos}: it polls its queue
     * and sleeps again. The engine's timer calls it on its ticks, which run while work is in flight, so
     * a completion whose event went missing waits about that long, as it did when the sleep was timed,
     * and a poller with nothing in flight is never woken. Any thread.
     */
    public void wakeIfAsleepLongerThan(long nanos, long now) {
        long since = asleepSince;
        if (since != 0 && now - since > nanos) {
            channel.wakeUp();
        }
    }

    private void dispatch(int n) {
        completed += n;
        try {
            handler.handle(completions, n);
        } catch (RuntimeException | Error e) {
            LOG.log(System.Logger.Level.ERROR, thread.getName() + ": completion handler failed", e);
        }
    }

    /** Times the thread went to sleep on the channel (counted as it goes): how tests see it sleep, and stay asleep. */
    public long sleeps() {
        return sleeps;
    }

    public long completed() {
        return completed;
    }

    public boolean isPollerThread() {
        return Thread.currentThread() == thread;
    }

    /** Ends the thread (woken from its sleep; bounded by {@link #STOP_WAIT}) without touching the queue. */
    public void stop() {
        running = false;
        channel.wakeUp(); // not under nativeCalls: the sleeping thread holds it; the channel guards its own close
        if (Thread.currentThread() != thread) {
            try {
                thread.join(STOP_WAIT.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Destroys the queue and channel; queue pairs using the queue must be destroyed first. The thread
     * makes no native call after this. If it overstayed {@link #stop()} (a handler that does not
     * return), its queue, channel and batch are left undestroyed rather than freed under it.
     */
    public void close() {
        stop();
        synchronized (nativeCalls) {
            if (destroyed) {
                return;
            }
            destroyed = true;
        }
        if (thread.isAlive() && !isPollerThread()) {
            LOG.log(System.Logger.Level.WARNING, thread.getName() + " is still in a completion handler after "
                    + STOP_WAIT.toMillis() + " ms: its completion queue is left to the device context's close");
            return;
        }
        cq.close();
        channel.close();
        completions.close();
    }
}
