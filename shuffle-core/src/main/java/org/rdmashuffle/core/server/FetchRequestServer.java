package org.rdmashuffle.core.server;

import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.protocol.MessageCodec;
import org.rdmashuffle.core.transport.DataConnection;
import org.rdmashuffle.core.transport.MetadataSender;

/**
 * Answers the fetch requests that arrive on serving connections. An answer that is ready (every
 * output it names registered: no disk to search, nothing to register) goes at once, from the poller
 * that received the request; the others are answered on a server thread, taken round-robin across
 * applications, with a bound per application beyond which the reducer is told "busy", a few of its
 * outputs per turn ({@link FetchRequestHandler#answerInTurns}). A connection of version 5 or later gets
 * held answers ({@link ConnectionHolds}), and its releases give the outputs back. Anything else on a
 * serving connection is a protocol error.
 *
 * <p>Every answer is encodable: a request is cut to the blocks an answer on its connection always
 * holds ({@link MessageCodec#descriptorsFitting}) before anything is described, so what a request
 * costs the poller is at most a constant times that many blocks, whatever it names. An answer is
 * counted as served once it is posted to its reducer.
 */
public final class FetchRequestServer {
    private static final System.Logger LOG = System.getLogger(FetchRequestServer.class.getName());

    /**
     * Outputs one turn of a server thread may find on disk or register for a request: a turn is short
     * (each piece of slow work is bounded by the lookup timeout), and the request goes to the back of
     * its application's queue for the rest, so other applications' requests run in between.
     */
    static final int SLOW_OUTPUTS_PER_TURN = 4;

    private static final java.util.function.Function<Message.FetchRequest, Message> BUSY = r -> new Message.ErrorResponse(
            r.requestId(), "the server is busy with this application's requests: try again");

    /**
     * What a request answered off the poller holds in the heap while it waits, besides its blocks: the
     * request, its progress, the turn's closures and futures, its timer task: some 0.5 KB, by the objects it keeps.
     */
    static final long WAITING_REQUEST_BYTES = 512;
    /** What each block of a waiting request holds (its id and the list's reference). */
    static final long WAITING_BLOCK_BYTES = 40;
    private static final ServiceUsage.Kind[] WAITING = {ServiceUsage.Kind.REQUESTS, ServiceUsage.Kind.REQUEST_BYTES};

    private final FairThreads work;
    /** How answers leave; a connection that cannot take one is failed to its owner. */
    private final MetadataSender replies;
    private final ServiceUsage usage;
    /** Before an answer through memory windows: the windows it makes are swept at their lease's end. */
    private final Runnable answeringThroughWindows;
    /**
     * The engine's timer (its cancelled tasks leave its queue): a request waiting for a search or a
     * registration has one task there for its timeout, cancelled when the wait ends first, so the
     * timer holds no more tasks than requests wait.
     */
    private final java.util.concurrent.ScheduledExecutorService timer;

    /**
     * @param work the server threads' queue, bounded per application, its running bound per user
     * @param usage where the requests being answered off the poller are counted, in number and in bytes
     * @param answeringThroughWindows called before each answer that hands out window keys (it may make windows)
     * @param timer where a waiting request's timeout is scheduled (with the remove-on-cancel policy)
     */
    public FetchRequestServer(FairThreads work, MetadataSender replies, ServiceUsage usage, Runnable answeringThroughWindows,
                              java.util.concurrent.ScheduledExecutorService timer) {
        this.work = work;
        this.replies = replies;
        this.usage = usage;
        this.answeringThroughWindows = answeringThroughWindows;
        this.timer = timer;
    }

    /** What a request answered off the poller is counted as: one request, and the bytes it holds while it waits. */
    private static long[] waitingCost(Message.FetchRequest r) {
        return new long[] {1, WAITING_REQUEST_BYTES + WAITING_BLOCK_BYTES * r.blocks().size()};
    }

    /**
     * A message received on serving connection {@code c}, on a poller thread. {@code holds}: what the
     * connection holds through held answers; null if it speaks a version before them (it gets leases).
     */
    public void onMessage(ServedTenant t, DataConnection c, Message m, ConnectionHolds holds) {
        if (m instanceof Message.Release release && holds != null) {
            t.registry().release(holds, t.app(), release.outputs()); // constant work per output it names
            return;
        }
        if (!(m instanceof Message.FetchRequest r)) {
            c.handler().onProtocolError(c, "a " + m.getClass().getSimpleName() + " where only fetch requests"
                    + (holds == null ? "" : " and releases") + " are served");
            return;
        }
        FetchRequestHandler requests = t.requests();
        // The most blocks an answer to c holds whatever their values: a request naming more (a reducer of
        // this release never does) is not described past them. A held answer may describe its first blocks
        // only, and its reducer asks for the others again; an earlier version's answer must describe all.
        int fitting = MessageCodec.descriptorsFitting(c.peerReceiveBufferSize());
        if (r.blocks().size() > fitting) {
            if (holds == null) {
                reply(t, c, r, requests.tooManyBlocks(t.app(), r, fitting), null, null);
                return;
            }
            r = new Message.FetchRequest(r.requestId(), r.shuffleId(), r.blocks().subList(0, fitting), r.withLayouts());
        }
        HeldAnswer held = holds == null ? null : new HeldAnswer(holds);
        // Layouts in up to half the reducer's receive buffer; an answer that outgrows it anyway goes
        // without them (MetadataSender).
        int layoutBytes = r.withLayouts() ? c.peerReceiveBufferSize() / 2 : 0;
        // Reads through windows: the keys this request's answer hands out, bound for c's queue pair alone.
        ServingWindows.Keys keys = t.windows() == null ? null : t.windows().keysFor(c);
        if (keys != null) {
            answeringThroughWindows.run();
        }
        Message ready = requests.answerIfReady(t.app(), r, layoutBytes, keys, held);
        if (ready != null) {
            reply(t, c, r, ready, keys, held);
            return;
        }
        // Held in the heap until answered: counted, in number and in bytes, against the application's, its
        // user's and the node's bounds.
        String full = usage.tryAdd(t.app(), WAITING, waitingCost(r));
        if (full != null) {
            reply(t, c, r, BUSY.apply(r), keys, held);
            return;
        }
        queueTurn(t, c, r, layoutBytes, new FetchRequestHandler.Progress(), keys, held);
    }

    /** Queues the next turn at {@code r}; a full queue is answered "busy". */
    private void queueTurn(ServedTenant t, DataConnection c, Message.FetchRequest r, int layoutBytes, FetchRequestHandler.Progress p,
                           ServingWindows.Keys keys, HeldAnswer held) {
        boolean queued = work.submit(t, t.user(), () -> turn(t, c, r, layoutBytes, p, keys, held));
        if (!queued) { // back-pressure: this application already has its share of the server threads' queue
            finish(t, c, r, BUSY.apply(r), keys, held);
        }
    }

    private void turn(ServedTenant t, DataConnection c, Message.FetchRequest r, int layoutBytes, FetchRequestHandler.Progress p,
                      ServingWindows.Keys keys, HeldAnswer held) {
        if (c.isClosed()) {
            finish(t, c, r, null, keys, held); // retired while the request waited: nobody to answer
            return;
        }
        Message answer;
        try {
            answer = t.requests().answerInTurns(t.app(), r, layoutBytes, p, SLOW_OUTPUTS_PER_TURN, keys, held);
        } catch (RuntimeException e) { // a bug, not a bad request: still answer, so the reducer need not time out
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: cannot answer a fetch request on " + c, e);
            answer = new Message.ErrorResponse(r.requestId(), "the server failed to answer (see its log)");
        }
        if (answer != null) {
            finish(t, c, r, answer, keys, held);
            return;
        }
        java.util.concurrent.CompletableFuture<?> waitFor = p.waitingFor();
        if (waitFor == null) {
            queueTurn(t, c, r, layoutBytes, p, keys, held); // the rest after the other applications' turns
        } else {
            // No thread waits: the next turn is queued when the search or registration is done, or its time is up.
            waitThenQueue(waitFor, t.registry().lookupTimeoutNanos(), () -> queueTurn(t, c, r, layoutBytes, p, keys, held),
                    () -> finish(t, c, r, null, keys, held));
        }
    }

    /**
     * Runs {@code next} once, when {@code waitFor} completes or {@code timeoutNanos} pass, whichever is
     * first: one task on the engine's timer, cancelled (and out of its queue) when the wait ends first.
     * What {@code waitFor} keeps after that (a search or registration that outlives the timeout) is a
     * cleared reference, not the request. {@code closing}: the timer no longer takes tasks (the engine
     * is closing): the request is ended unanswered.
     */
    private void waitThenQueue(java.util.concurrent.CompletableFuture<?> waitFor, long timeoutNanos, Runnable next,
                               Runnable closing) {
        java.util.concurrent.atomic.AtomicReference<Runnable> once = new java.util.concurrent.atomic.AtomicReference<>(next);
        Runnable resume = () -> {
            Runnable n = once.getAndSet(null);
            if (n != null) {
                n.run();
            }
        };
        java.util.concurrent.ScheduledFuture<?> late;
        try {
            late = timer.schedule(resume, timeoutNanos, java.util.concurrent.TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.RejectedExecutionException shutDown) {
            once.set(null);
            closing.run();
            return;
        }
        waitFor.whenComplete((done, failed) -> {
            late.cancel(false);
            resume.run();
        });
    }

    /** Ends a request answered off the poller: it is counted out, and the answer (if any) sent. */
    private void finish(ServedTenant t, DataConnection c, Message.FetchRequest r, Message answer, ServingWindows.Keys keys,
                        HeldAnswer held) {
        long[] cost = waitingCost(r);
        for (int i = 0; i < WAITING.length; i++) {
            usage.remove(WAITING[i], t.app(), cost[i]);
        }
        if (answer != null) {
            reply(t, c, r, answer, keys, held);
        } else if (held != null) {
            t.registry().giveBack(held);
        }
    }

    /**
     * Sends {@code answer}, after the window binds it needs ({@code keys}, if reads go through windows).
     * What {@code held} holds is given back unless the answer goes as a held answer (the reducer then releases it).
     */
    private void reply(ServedTenant t, DataConnection c, Message.FetchRequest r, Message answer, ServingWindows.Keys keys,
                       HeldAnswer held) {
        if (held != null && !(answer instanceof Message.FetchResponse f && f.held())) {
            t.registry().giveBack(held);
        }
        if (c.isClosed()) {
            return; // retired while a server thread answered (its holds went with it)
        }
        try {
            if (keys != null) {
                keys.commit(); // posted before the SEND: the reducer reads only once they took effect
            }
            // Without its layouts if they do not fit (MetadataSender); counted as served once posted.
            replies.send(c, answer, false, answer instanceof Message.FetchResponse f ? () -> t.requests().sent(f) : null);
        } catch (IllegalArgumentException tooBig) { // a bug: an answer is cut to what fits before it is made
            if (held != null) {
                t.registry().giveBack(held);
            }
            try {
                replies.send(c, new Message.ErrorResponse(r.requestId(), "the answer does not fit the reducer's "
                        + c.peerReceiveBufferSize() + "-byte receive buffer"), false);
            } catch (RuntimeException e) {
                e.addSuppressed(tooBig);
                failed(c, e);
            }
        } catch (RuntimeException e) {
            failed(c, e);
        }
    }

    /** A send to {@code c} failed: its owner hears of it, unless it was retired meanwhile (nobody to tell then). */
    private static void failed(DataConnection c, RuntimeException e) {
        if (!c.isClosing()) { // retired meanwhile: its application stopped, its peer cut off
            c.handler().onFailure(c, e);
        }
    }
}
