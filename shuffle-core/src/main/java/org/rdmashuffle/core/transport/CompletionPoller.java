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
 * completion channel, so an idle process burns no CPU. The sleep is bounded, so {@link #stop()}
 * returns within about {@link #SLEEP}.
 */
public final class CompletionPoller {
    /** Completions dispatched by the thread that polled them; called with nothing locked. */
    @FunctionalInterface
    public interface Handler {
        void handle(WorkCompletions completions, int count);
    }

    static final Duration SLEEP = Duration.ofMillis(100);
    private static final System.Logger LOG = System.getLogger(CompletionPoller.class.getName());

    private final CompletionChannel channel;
    private final CompletionQueue cq;
    private final WorkCompletions completions;
    private final long busyPollNanos;
    private final Handler handler;
    private final Thread thread;
    private volatile boolean running = true;
    private volatile long sleeps;
    private volatile long completed;

    public CompletionPoller(VerbsContext context, String name, int cqEntries, int batch, Duration busyPoll, Handler handler) {
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
                int n = cq.poll(completions);
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
                    Thread.onSpinWait();
                    continue;
                }
                cq.requestNotify(false);
                n = cq.poll(completions); // one that arrived before the arm raises no event
                if (n > 0) {
                    dispatch(n);
                    idleSince = 0;
                    continue;
                }
                CompletionQueue woke = channel.awaitEvent(SLEEP);
                sleeps++;
                if (woke != null) {
                    woke.acknowledgeEvents(1);
                }
                idleSince = 0;
            } catch (RuntimeException e) {
                if (running) {
                    LOG.log(System.Logger.Level.ERROR, thread.getName() + ": polling failed; continuing", e);
                }
            }
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

    /** Times the thread went to sleep on the channel: grows while idle, which is how tests see it sleep. */
    public long sleeps() {
        return sleeps;
    }

    public long completed() {
        return completed;
    }

    public boolean isPollerThread() {
        return Thread.currentThread() == thread;
    }

    /** Ends the thread (bounded by one sleep) without touching the queue. */
    public void stop() {
        running = false;
        if (Thread.currentThread() != thread) {
            try {
                thread.join(SLEEP.toMillis() * 20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Destroys the queue and channel; queue pairs using the queue must be destroyed first. */
    public void close() {
        stop();
        cq.close();
        channel.close();
        completions.close();
    }
}
