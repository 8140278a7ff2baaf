package org.rdmashuffle.core.client;

import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;

/**
 * Runs fetch calls on a thread of its own, in the order they come, so that the caller -- a reduce
 * task, whose fetch call Spark counts as fetch wait -- returns at once, as it does with Spark's own
 * transport (which hands a request to its event loop). On the software provider a fetch call's
 * requests and reads are socket writes that wake the provider's threads in both processes; made on
 * the task's thread, those threads took the cores from it while it was still in the call (measured:
 * docs/benchmarks.md, the main job on one machine). On a device a post is a doorbell: the engine
 * then calls inline and makes no submitter.
 *
 * <p>Bounded: at most {@link #MAX_QUEUED} calls wait; beyond that, and once closed, the caller runs
 * its call itself (never dropped). The thread is a daemon, started by the first call and gone after
 * {@link #IDLE_MILLIS} without one. A hand-off allocates nothing but the caller's call object: a
 * monitor and an array deque, where an executor's blocking queue makes a node per wait.
 */
public final class FetchSubmitter implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(FetchSubmitter.class.getName());
    /** Calls waiting for the thread; a reduce task makes one per peer per request, so this is far more than a burst. */
    static final int MAX_QUEUED = 1024;
    static final long IDLE_MILLIS = 30_000;
    /** How long {@link #close} lets queued calls run on the thread before running the rest itself. */
    private static final long CLOSE_WAIT_MILLIS = 1000;

    private final String name;
    /** Guarded by this, as are the fields below. */
    private final ArrayDeque<Runnable> queue = new ArrayDeque<>();
    /** The running thread, or null while none runs. */
    private Thread thread;
    /** Whether the thread waits for a call (then a call notifies it). */
    private boolean idle;
    private boolean closed;

    public FetchSubmitter(String name) {
        this.name = name;
    }

    /** Runs {@code call} on the submitter's thread, or on this one if the queue is full or the submitter closed. */
    public void submit(Runnable call) {
        synchronized (this) {
            if (!closed && queue.size() < MAX_QUEUED) {
                queue.addLast(call);
                if (thread == null) {
                    thread = Thread.ofPlatform().daemon().name(name).start(this::loop);
                } else if (idle) {
                    notify();
                }
                return;
            }
        }
        run(call);
    }

    private void loop() {
        while (true) {
            Runnable call;
            synchronized (this) {
                long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(IDLE_MILLIS);
                while ((call = queue.pollFirst()) == null) {
                    long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                    if (closed || left <= 0) {
                        thread = null;
                        notifyAll(); // close may wait for this
                        return;
                    }
                    idle = true;
                    try {
                        wait(left);
                    } catch (InterruptedException e) {
                        // nobody interrupts it; look again
                    } finally {
                        idle = false;
                    }
                }
            }
            run(call);
        }
    }

    private static void run(Runnable call) {
        try {
            call.run();
        } catch (RuntimeException | Error e) { // a call reports to its own listener; this is a bug, logged
            LOG.log(System.Logger.Level.ERROR, "a fetch call failed", e);
        }
    }

    /**
     * Takes no more calls; those queued run (on the thread for up to a second, then on this one), so
     * every block submitted still gets its one listener call -- a failure, if the engine is closed.
     */
    @Override
    public void close() {
        ArrayDeque<Runnable> left;
        synchronized (this) {
            closed = true;
            notifyAll();
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLOSE_WAIT_MILLIS);
            while (thread != null && !queue.isEmpty() && thread != Thread.currentThread()) {
                long wait = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (wait <= 0) {
                    break;
                }
                try {
                    wait(wait);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            left = new ArrayDeque<>(queue); // a call held up on the thread: the rest run here
            queue.clear();
        }
        left.forEach(FetchSubmitter::run);
    }
}
