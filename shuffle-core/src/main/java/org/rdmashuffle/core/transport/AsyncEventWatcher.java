package org.rdmashuffle.core.transport;

import java.time.Duration;

import org.rdmashuffle.verbs.AsyncEvent;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.SharedReceiveQueue;
import org.rdmashuffle.verbs.VerbsContext;

/**
 * The device's asynchronous events, read on a thread of their own (a daemon): a shared receive queue
 * running low, and queue pairs the device put in error. Others are logged. {@link #close()} wakes the
 * thread and waits for it to end, before the context may be closed: no native call after it. The wait
 * for an event lasts until one comes or the wake-up ({@link #WAIT}; a wake-up is kept until taken, on
 * both providers), so an idle engine never wakes this thread.
 */
public final class AsyncEventWatcher implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(AsyncEventWatcher.class.getName());
    /** A wait for an event: in effect until one comes or {@link #close()} wakes it. */
    private static final Duration WAIT = Duration.ofDays(1);
    /** How long {@link #close()} waits for the thread once woken (a handler under way). */
    private static final Duration STOP_WAIT = Duration.ofSeconds(3);

    /** What the events mean to the engine. */
    public interface Handler {
        /** {@code srq} fell below its limit: post the receives gathered so far, and re-arm it. */
        void receiveQueueLow(SharedReceiveQueue srq);

        /** The device put queue pair {@code qpNumber} in error: its connection fails. */
        void queuePairFailed(int qpNumber, AsyncEvent.Type type);
    }

    private final VerbsContext context;
    private final Handler handler;
    private final Thread thread;
    private volatile boolean stopped;

    public AsyncEventWatcher(VerbsContext context, Handler handler) {
        this.context = context;
        this.handler = handler;
        this.thread = Thread.ofPlatform().daemon().name("rdma-shuffle-async-events").start(this::run);
    }

    private void run() {
        while (!stopped) {
            AsyncEvent e;
            try {
                e = context.awaitAsyncEvent(WAIT);
            } catch (RuntimeException ex) {
                if (!stopped) {
                    LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: reading async events failed", ex);
                }
                return;
            }
            if (e == null || stopped) {
                continue;
            }
            try {
                dispatch(e);
            } catch (RuntimeException | Error ex) { // one event's handling failed: the next is still read
                LOG.log(System.Logger.Level.ERROR, "rdma-shuffle: handling device event " + e.type() + " failed", ex);
            }
        }
    }

    private void dispatch(AsyncEvent e) {
        switch (e.type()) {
            case SRQ_LIMIT_REACHED -> {
                if (e.source() instanceof SharedReceiveQueue srq) {
                    handler.receiveQueueLow(srq);
                }
            }
            case QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR -> {
                if (e.source() instanceof QueuePair qp) {
                    handler.queuePairFailed(qp.qpNumber(), e.type());
                }
            }
            default -> LOG.log(System.Logger.Level.INFO, "rdma-shuffle: device event " + e.type() + " on port " + e.portNumber());
        }
    }

    /** Stops reading events; returns once the thread has ended (or after {@link #STOP_WAIT}, if a handler is stuck). */
    @Override
    public void close() {
        stopped = true;
        context.wakeAsyncEventWaiter();
        try {
            thread.join(STOP_WAIT.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
