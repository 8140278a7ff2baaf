package org.rdmashuffle.verbs.software;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.QueuePairEndpoint;
import org.rdmashuffle.verbs.QueuePairState;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkRequestOpcode;
import org.rdmashuffle.verbs.conformance.VerbsTestSupport;

/** What a requester sees when its peer dies or speaks garbage: errors and flushes, never a hang or a crash. */
class SoftwarePeerFailureTest {

    @Test
    void peerKilledWithRequestsOutstandingFlushesThem() {
        try (SoftwarePair pair = new SoftwarePair().connect(SoftwarePair.OPTIONS);
             MemoryRegion src = pair.requesterPd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             SendWorkRequests chain = SendWorkRequests.allocate(3, 1)) {
            // No receive is posted at the responder and rnr_retry is 7 (forever): the sends stay outstanding.
            for (int i = 0; i < 3; i++) {
                chain.get(i).reset().wrId(70 + i).opcode(WorkRequestOpcode.SEND).flags(i == 2 ? SendFlags.SIGNALED : 0)
                        .sge(0, src, 0, 64).sgeCount(1);
            }
            pair.requester.postSend(chain, 3);
            pair.responderHost.close(); // the peer dies
            List<VerbsTestSupport.Completion> done = VerbsTestSupport.awaitCompletions(pair.requesterCq, 3);
            assertEquals(List.of(70L, 71L, 72L), done.stream().map(VerbsTestSupport.Completion::wrId).toList(),
                    "errors complete every request, signaled or not, in order");
            assertEquals(WorkCompletionStatus.RETRY_EXC_ERR, done.get(0).status());
            assertEquals(WorkCompletionStatus.WR_FLUSH_ERR, done.get(1).status());
            assertEquals(WorkCompletionStatus.WR_FLUSH_ERR, done.get(2).status());
            assertEquals(QueuePairState.ERR, pair.requester.query().state());
        }
    }

    @Test
    void malformedFrameMovesTheQueuePairToErrorAndClosesTheConnection() throws IOException {
        try (SoftwarePair pair = new SoftwarePair()) {
            QueuePairEndpoint target = pair.responder.localEndpoint(SoftwarePair.OPTIONS);
            pair.responder.modifyToInit(SoftwarePair.OPTIONS);
            try (RawLinkPeer peer = new RawLinkPeer(target.lid())) {
                assertEquals(0, peer.helloVerdict());
                assertEquals(0, peer.attach(1, target.qpNumber(), target.admissionToken()), "joined with the issued token");
                Frame garbage = Frame.request((byte) 99, 0); // no such frame type
                garbage.srcQpn = 1;
                garbage.dstQpn = target.qpNumber();
                peer.write(garbage);
                assertEquals(-1, peer.in.read(), "the link hangs up on a malformed frame");
            }
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (pair.responder.query().state() != QueuePairState.ERR && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertEquals(QueuePairState.ERR, pair.responder.query().state());
        }
    }

    @Test
    void aWrongTypeResponseFailsTheQueuePair() throws Exception {
        try (SoftwarePair pair = new SoftwarePair();
             MemoryRegion local = pair.requesterPd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             SendWorkRequests chain = SendWorkRequests.allocate(1, 1)) {
            QueuePairEndpoint mine = pair.requester.localEndpoint(SoftwarePair.OPTIONS);
            // A peer with a higher port than ours dials us (we wait): the test is that peer.
            QueuePairEndpoint fake = new QueuePairEndpoint(7, 0, mine.gid(), 65535, mine.mtu(), "any");
            pair.requester.connect(fake, SoftwarePair.OPTIONS);
            try (RawLinkPeer peer = new RawLinkPeer(mine.lid())) {
                assertEquals(0, peer.helloVerdict());
                assertEquals(0, peer.attach(7, mine.qpNumber(), mine.admissionToken()), "joined");
                local.segment().fill((byte) 0x5a);
                chain.get(0).rdmaRead(41, SendFlags.SIGNALED, local, 0, 64, 0x1000, 5);
                pair.requester.postSend(chain, 1);
                Frame request = peer.readHeader();
                assertEquals(Frame.READ, request.type);
                // Answer the READ with an ACK: a response that carries no data.
                Frame ack = Frame.response(Frame.ACK, request.sequence, 0);
                ack.srcQpn = 7;
                ack.dstQpn = mine.qpNumber();
                peer.write(ack);
                VerbsTestSupport.Completion c = VerbsTestSupport.awaitCompletions(pair.requesterCq, 1).getFirst();
                assertEquals(41, c.wrId());
                assertEquals(WorkCompletionStatus.BAD_RESP_ERR, c.status(), "an ACK completed a READ: " + c);
                assertEquals(QueuePairState.ERR, pair.requester.query().state());
                assertEquals((byte) 0x5a, local.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0), "nothing written");
            }
        }
    }
}
