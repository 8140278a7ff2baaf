package org.rdmashuffle.core.control;

import java.util.Collections;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.util.concurrent.EventExecutor;

/**
 * The control plane's Netty event loops, made so that they sleep while there is nothing to do. Netty
 * 4.2's loops ({@code SingleThreadIoEventLoop}) wait at most a second when no task is scheduled
 * ({@code SingleThreadEventExecutor.delayNanos} returns its one-second purge interval then), so an idle
 * loop wakes every second; with one far-off task always scheduled it waits for that task instead, or
 * for I/O, or for a task another thread hands it (issue 52 item 7: every engine has a server loop and
 * two client loops, which made three wake-ups a second at rest). A loop gets its task when its first
 * channel registers ({@link #keepQuiet}), so a loop never used is never started. Holds the loops so
 * treated, weakly (a group shut down lets them go); any thread.
 */
final class QuietEventLoops {
    /** How often a loop with nothing else to do wakes (the far-off task's period). */
    static final long WAKE_HOURS = 1;
    private static final Runnable NOTHING = () -> { };
    private static final Set<EventExecutor> QUIETED = Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

    private QuietEventLoops() {
    }

    /** {@code threads} NIO event loops on {@code threadFactory}'s threads, for channels that {@link #keepQuiet} theirs. */
    static EventLoopGroup of(int threads, ThreadFactory threadFactory) {
        return new MultiThreadIoEventLoopGroup(threads, threadFactory, NioIoHandler.newFactory());
    }

    /** Gives {@code loop} its far-off task, once (a channel on it registered); cancelled by the group's shutdown. */
    static void keepQuiet(EventExecutor loop) {
        if (QUIETED.add(loop)) {
            loop.scheduleAtFixedRate(NOTHING, WAKE_HOURS, WAKE_HOURS, TimeUnit.HOURS);
        }
    }
}
