package org.rdmashuffle.verbs.software;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A selector thread that does the socket I/O of many links ({@link PeerLink}): it reads and
 * dispatches their frames and writes what posting threads could not write at once. Links are
 * non-blocking, so a posting thread writes a frame itself when its link's writer is idle (no hand-off,
 * no wake-up), and the loop only steps in when a socket is full. Nothing on a loop waits but its
 * selector: frames that cannot be served now are refused (RNR NAK), never held.
 *
 * <p>The loops of a process are shared by all its software devices ({@link Group#acquire()}), as
 * Netty's event loops are shared by its channels: threads do not grow with devices or links.
 */
final class LinkLoop implements Runnable {
    private static final System.Logger LOG = System.getLogger(LinkLoop.class.getName());

    /** What a loop calls on a registered link (on the loop's thread). */
    interface Handler {
        void readable();

        void writable();

        /** The loop is ending (its group closed) with the link still on it. */
        void loopClosed();
    }

    private final Selector selector;
    private final Thread thread;
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final java.util.function.Consumer<SelectionKey> handle = LinkLoop::handle;
    private volatile boolean closed;

    private LinkLoop(String name) {
        try {
            selector = Selector.open();
        } catch (IOException e) {
            throw new UncheckedIOException("software provider cannot open a selector", e);
        }
        thread = Thread.ofPlatform().daemon().name(name).start(this);
    }

    boolean inLoop() {
        return Thread.currentThread() == thread;
    }

    /** Runs {@code task} on the loop, after what it is doing now. */
    void execute(Runnable task) {
        tasks.add(task);
        if (!inLoop()) {
            selector.wakeup();
        }
    }

    /** Registers a non-blocking channel for reading; waits (bounded) until the loop has it. */
    SelectionKey register(SocketChannel channel, Handler handler) throws IOException {
        CompletableFuture<SelectionKey> key = new CompletableFuture<>();
        execute(() -> {
            try {
                key.complete(channel.register(selector, SelectionKey.OP_READ, handler));
            } catch (ClosedChannelException | RuntimeException e) {
                key.completeExceptionally(e);
            }
        });
        try {
            return key.get(5, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw new IOException("cannot register the link with its loop: " + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            throw new IOException("the link's loop did not take it within 5 s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while registering a link");
        }
    }

    /** Asks for (or stops asking for) a wake-up when {@code key}'s socket has room to write. */
    void wantWritable(SelectionKey key, boolean on) {
        try {
            if (on) {
                key.interestOpsOr(SelectionKey.OP_WRITE);
                if (!inLoop()) {
                    selector.wakeup(); // a select in progress uses the interest it started with
                }
            } else {
                key.interestOpsAnd(~SelectionKey.OP_WRITE);
            }
        } catch (CancelledKeyException e) {
            // the link closed: nothing to write any more
        }
    }

    @Override
    public void run() {
        while (!closed) {
            for (Runnable t; (t = tasks.poll()) != null; ) {
                runSafely(t);
            }
            try {
                // Ready keys go straight to handle (no selected-key set, no iterator per turn).
                if (tasks.isEmpty()) {
                    selector.select(handle); // a task added from another thread from now on wakes it
                } else {
                    selector.selectNow(handle); // added by a task or handler of this turn
                }
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "software provider: select failed", e);
            }
        }
        for (SelectionKey key : selector.keys()) {
            runSafely(((Handler) key.attachment())::loopClosed);
        }
        for (Runnable t; (t = tasks.poll()) != null; ) {
            runSafely(t);
        }
        try {
            selector.close();
        } catch (IOException ignored) {
            // ending anyway
        }
    }

    /** Calls a ready link's handler: writes first (room frees what waits), then reads. */
    private static void handle(SelectionKey key) {
        Handler h = (Handler) key.attachment();
        try {
            int ready = key.readyOps();
            if ((ready & SelectionKey.OP_WRITE) != 0) {
                h.writable();
            }
            if ((ready & SelectionKey.OP_READ) != 0 && key.isValid()) {
                h.readable();
            }
        } catch (CancelledKeyException e) {
            // closed meanwhile by another thread
        } catch (RuntimeException | Error e) { // the loop serves every other link: it goes on
            LOG.log(System.Logger.Level.ERROR, "software provider: a link's handler failed", e);
        }
    }

    private static void runSafely(Runnable t) {
        try {
            t.run();
        } catch (RuntimeException | Error e) { // the loop serves every other link: it goes on
            LOG.log(System.Logger.Level.ERROR, "software provider: a link task failed", e);
        }
    }

    private void close() {
        closed = true;
        selector.wakeup();
        if (!inLoop()) {
            try {
                thread.join(2000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * The process's loops, started when the first device needs them and ended when the last device
     * that acquired them closes. Their number is {@value #LOOPS_PROPERTY} (default: half the cores, at least one).
     */
    static final class Group {
        static final String LOOPS_PROPERTY = "rdmashuffle.verbs.software.loops";
        private static Group shared;
        private static int users;

        private final LinkLoop[] loops;
        private final AtomicInteger next = new AtomicInteger();

        private Group(int n) {
            loops = new LinkLoop[n];
            for (int i = 0; i < n; i++) {
                loops[i] = new LinkLoop("rdma-soft-link-loop-" + i);
            }
        }

        static synchronized Group acquire() {
            if (shared == null) {
                int n = Integer.getInteger(LOOPS_PROPERTY, Math.max(1, Runtime.getRuntime().availableProcessors() / 2));
                if (n < 1 || n > 256) {
                    throw new IllegalArgumentException("-D" + LOOPS_PROPERTY + "=" + n + ": must be 1 to 256");
                }
                shared = new Group(n);
            }
            users++;
            return shared;
        }

        /** Ends the loops once no device uses them (links still on them are closed first). */
        static void release(Group g) {
            synchronized (Group.class) {
                if (g != shared || --users > 0) {
                    return;
                }
                shared = null;
            }
            for (LinkLoop l : g.loops) {
                l.close();
            }
        }

        /** The loop for a new link (round robin). */
        LinkLoop next() {
            return loops[Math.floorMod(next.getAndIncrement(), loops.length)];
        }
    }
}
