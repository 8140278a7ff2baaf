package org.rdmashuffle.verbs.software;

import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.rdmashuffle.verbs.CompletionChannel;
import org.rdmashuffle.verbs.CompletionQueue;

/**
 * A completion channel without a file descriptor: armed CQs put themselves on a queue; a wake-up is
 * a marker on the same queue.
 */
final class SoftCompletionChannel implements CompletionChannel {
    private static final Object WAKE_UP = new Object();
    private final LinkedBlockingQueue<Object> events = new LinkedBlockingQueue<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    int users;

    void deliver(SoftCompletionQueue cq) {
        events.add(cq);
    }

    @Override
    public CompletionQueue awaitEvent(Duration timeout) {
        if (closed.get()) {
            throw new IllegalStateException("completion channel is closed");
        }
        try {
            Object event = events.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
            if (event instanceof SoftCompletionQueue cq) {
                cq.eventReceived();
                return cq;
            }
            return null; // timed out, or woken
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    @Override
    public void wakeUp() {
        if (!closed.get()) {
            events.add(WAKE_UP);
        }
    }

    @Override
    public int fd() {
        return -1;
    }

    @Override
    public synchronized void close() {
        if (users > 0) {
            throw new IllegalStateException(users + " completion queue(s) still use this channel: close them first");
        }
        closed.set(true);
    }
}
