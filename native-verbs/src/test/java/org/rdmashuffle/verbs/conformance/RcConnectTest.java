package org.rdmashuffle.verbs.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairAttributes;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.QueuePairState;
import org.rdmashuffle.verbs.VerbsException;

/** RC queue pairs walk RESET → INIT → RTR → RTS against the peer's endpoint. */
class RcConnectTest {

    @Test
    void connectedPairsAreReadyToSendAndPointAtEachOther() {
        try (Loopback l = Loopback.open()) {
            QueuePairAttributes a = l.a.query();
            QueuePairAttributes b = l.b.query();
            assertEquals(QueuePairState.RTS, a.state());
            assertEquals(QueuePairState.RTS, b.state());
            assertEquals(l.b.qpNumber(), a.destQpNumber());
            assertEquals(l.a.qpNumber(), b.destQpNumber());
            assertEquals(l.a.initialPsn(), a.sqPsn());
            assertEquals(l.b.initialPsn(), a.rqPsn());
            assertTrue(a.pathMtu().bytes() <= l.target.mtu().bytes());
            assertTrue(a.capabilities().maxSendWr() >= 128, a.capabilities()::toString);
        }
    }

    @Test
    void newQueuePairStartsInReset() {
        try (Loopback l = Loopback.open();
             CompletionQueue cq = l.context.createCompletionQueue(4, null, 0);
             QueuePair qp = l.pd.createQueuePair(QueuePairConfig.of(cq, 4, 4, 1))) {
            assertEquals(QueuePairState.RESET, qp.query().state());
            assertTrue(qp.qpNumber() > 0 && qp.qpNumber() <= 0xFFFFFF);
        }
    }

    @Test
    void skippingInitIsRefusedWithTheCallAndErrno() {
        try (Loopback l = Loopback.open();
             CompletionQueue cq = l.context.createCompletionQueue(4, null, 0);
             QueuePair qp = l.pd.createQueuePair(QueuePairConfig.of(cq, 4, 4, 1))) {
            VerbsException e = assertThrows(VerbsException.class,
                    () -> qp.modifyToReadyToReceive(l.a.localEndpoint(l.options), l.options));
            assertTrue(e.getMessage().startsWith("ibv_modify_qp(RTR, QP " + qp.qpNumber() + ")"), e.getMessage());
            assertTrue(e.errno() != 0, e.getMessage());
            assertEquals(QueuePairState.RESET, qp.query().state());
        }
    }
}
