package org.rdmashuffle.core.client;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
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
 * its call itself (never dropped). The thread is a daemon and goes when idle.
 */
public final class FetchSubmitter implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(FetchSubmitter.class.getName());
    /** Calls waiting for the thread; a reduce task makes one per peer per request, so this is far more than a burst. */
    static final int MAX_QUEUED = 1024;
    /** How long {@link #close} lets queued calls run on the thread before running the rest itself. */
    private static final long CLOSE_WAIT_MILLIS = 1000;

    private final ThreadPoolExecutor thread;

    public FetchSubmitter(String name) {
        this.thread = new ThreadPoolExecutor(1, 1, 30, TimeUnit.SECONDS, new ArrayBlockingQueue<>(MAX_QUEUED),
                r -> Thread.ofPlatform().daemon().name(name).unstarted(r));
        thread.allowCoreThreadTimeOut(true); // an engine that fetches nothing holds no thread
    }

    /** Runs {@code call} on the submitter's thread, or on this one if the queue is full or the submitter closed. */
    public void submit(Runnable call) {
        try {
            thread.execute(() -> run(call));
        } catch (RejectedExecutionException full) {
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
        thread.shutdown();
        try {
            thread.awaitTermination(CLOSE_WAIT_MILLIS, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        // Not shutdownNow: an interrupt would close a socket channel the software provider is writing to.
        List<Runnable> left = new ArrayList<>();
        thread.getQueue().drainTo(left);
        left.forEach(Runnable::run);
    }
}
