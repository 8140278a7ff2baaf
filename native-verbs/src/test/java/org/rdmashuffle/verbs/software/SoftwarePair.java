package org.rdmashuffle.verbs.software;

import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.VerbsContext;

/**
 * Two software devices (two providers, as two hosts would have) with one RC QP each, connected
 * over loopback TCP. Closing the responder's provider is how a test kills the peer.
 */
final class SoftwarePair implements AutoCloseable {
    static final ConnectOptions OPTIONS = ConnectOptions.defaults(1, 0, Mtu.MTU_4096);

    final SoftwareProvider requesterHost;
    final SoftwareProvider responderHost;
    final VerbsContext requesterContext;
    final VerbsContext responderContext;
    final ProtectionDomain requesterPd;
    final ProtectionDomain responderPd;
    final CompletionQueue requesterCq;
    final CompletionQueue responderCq;
    final QueuePair requester;
    final QueuePair responder;

    SoftwarePair() {
        this(SoftwareProvider.Config.loopback());
    }

    SoftwarePair(SoftwareProvider.Config config) {
        requesterHost = new SoftwareProvider(config);
        responderHost = new SoftwareProvider(config);
        requesterContext = requesterHost.devices().getFirst().open();
        responderContext = responderHost.devices().getFirst().open();
        requesterPd = requesterContext.allocateProtectionDomain();
        responderPd = responderContext.allocateProtectionDomain();
        requesterCq = requesterContext.createCompletionQueue(256, null, 0);
        responderCq = responderContext.createCompletionQueue(256, null, 0);
        requester = requesterPd.createQueuePair(QueuePairConfig.of(requesterCq, 64, 64, 4));
        responder = responderPd.createQueuePair(QueuePairConfig.of(responderCq, 64, 64, 4));
    }

    SoftwarePair connect(ConnectOptions options) {
        requester.connect(responder.localEndpoint(options), options);
        responder.connect(requester.localEndpoint(options), options);
        return this;
    }

    @Override
    public void close() {
        requester.close();
        responder.close();
        requesterHost.close();
        responderHost.close();
    }
}
