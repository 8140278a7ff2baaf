package org.rdmashuffle.verbs.conformance;

import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.VerbsContext;

/**
 * Two RC queue pairs on one device connected to each other, each with its own CQ: the smallest
 * fixture that exercises the whole wire path (a single rxe device loops packets internally).
 * Closes everything it made, children first.
 */
public final class Loopback implements AutoCloseable {
    public final VerbsTestSupport.Target target;
    public final VerbsContext context;
    public final ProtectionDomain pd;
    public final CompletionQueue cqA;
    public final CompletionQueue cqB;
    public final QueuePair a;
    public final QueuePair b;
    public final ConnectOptions options;

    private Loopback(VerbsTestSupport.Target target, int maxSendWr, int maxSge, int maxInline, ConnectOptions options) {
        this(target, maxSendWr, maxSge, maxInline, options, 0);
    }

    private Loopback(VerbsTestSupport.Target target, int maxSendWr, int maxSge, int maxInline, ConnectOptions options,
                     int sendOps) {
        this.target = target;
        this.options = options;
        this.context = target.device().open();
        this.pd = context.allocateProtectionDomain();
        this.cqA = context.createCompletionQueue(maxSendWr * 2, null, 0);
        this.cqB = context.createCompletionQueue(maxSendWr * 2, null, 0);
        this.a = pd.createQueuePair(QueuePairConfig.of(cqA, maxSendWr, maxSendWr, maxSge).withMaxInlineData(maxInline)
                .withSendOps(sendOps));
        this.b = pd.createQueuePair(QueuePairConfig.of(cqB, maxSendWr, maxSendWr, maxSge).withMaxInlineData(maxInline)
                .withSendOps(sendOps));
        a.connect(b.localEndpoint(options), options);
        b.connect(a.localEndpoint(options), options);
    }

    public static Loopback open() {
        VerbsTestSupport.Target t = VerbsTestSupport.target();
        return new Loopback(t, 128, 4, 0, t.connectOptions());
    }

    public static Loopback open(int maxSendWr, int maxSge, int maxInline) {
        VerbsTestSupport.Target t = VerbsTestSupport.target();
        return new Loopback(t, maxSendWr, maxSge, maxInline, t.connectOptions());
    }

    /** QPs created for the extended post path ({@code ibv_wr_*}) with every builder operation. */
    public static Loopback openExtended(int maxSendWr, int maxSge, int maxInline) {
        VerbsTestSupport.Target t = VerbsTestSupport.target();
        return new Loopback(t, maxSendWr, maxSge, maxInline, t.connectOptions(), org.rdmashuffle.verbs.SendOps.ALL_BUILDER_OPS);
    }

    /** Fail-fast QPs (see {@link #openFailFast}) created for the extended post path with {@code sendOps}. */
    public static Loopback openFailFastWithSendOps(int sendOps) {
        return openFailFastWithSendOps(sendOps, 0);
    }

    /** As {@link #openFailFastWithSendOps(int)}, the QPs also allowing {@code extraRemoteAccess} (e.g. FLUSH_GLOBAL). */
    public static Loopback openFailFastWithSendOps(int sendOps, int extraRemoteAccess) {
        VerbsTestSupport.Target t = VerbsTestSupport.target();
        ConnectOptions o = t.connectOptions().withRnrRetry(1).withRetry(14, 1);
        return new Loopback(t, 128, 4, 0, o.withRemoteAccess(o.remoteAccess() | extraRemoteAccess), sendOps);
    }

    /** With few retries, so a QP that hits a remote error fails fast instead of retrying for seconds. */
    public static Loopback openFailFast() {
        VerbsTestSupport.Target t = VerbsTestSupport.target();
        return new Loopback(t, 128, 4, 0, t.connectOptions().withRnrRetry(1).withRetry(14, 1));
    }

    @Override
    public void close() {
        a.close();
        b.close();
        cqA.close();
        cqB.close();
        pd.close();
        context.close();
    }
}
