package org.rdmashuffle.verbs.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.lang.foreign.ValueLayout;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.CompletionChannel;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.ReceiveWorkRequests;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkRequestOpcode;

/** FENCE orders a request after earlier reads; SOLICITED wakes a receiver armed for solicited events only. */
class SendFlagsTest {

    @Test
    void fencedWriteStartsOnlyAfterTheEarlierReadCompleted() {
        try (Loopback l = Loopback.open();
             MemoryRegion remote = l.pd.allocateAndRegister(1 << 20, Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE);
             MemoryRegion local = l.pd.allocateAndRegister(1 << 20, Access.LOCAL_WRITE);
             MemoryRegion fresh = l.pd.allocateAndRegister(1 << 20, Access.LOCAL_WRITE);
             SendWorkRequests chain = SendWorkRequests.allocate(2, 1)) {
            remote.segment().fill((byte) 1);
            fresh.segment().fill((byte) 2);
            int len = 1 << 20;
            chain.get(0).rdmaRead(1, 0, local, 0, len, remote.address(), remote.rkey());
            chain.get(1).reset().wrId(2).opcode(WorkRequestOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED | SendFlags.FENCE)
                    .remote(remote.address(), remote.rkey()).sge(0, fresh, 0, len).sgeCount(1);
            l.a.postSend(chain, 2);
            assertEquals(WorkCompletionStatus.SUCCESS, VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst().status());
            byte[] ones = new byte[len];
            java.util.Arrays.fill(ones, (byte) 1);
            assertEquals(-1, local.segment().mismatch(java.lang.foreign.MemorySegment.ofArray(ones)),
                    "the read saw only the bytes from before the fenced write");
            assertEquals(2, remote.segment().get(ValueLayout.JAVA_BYTE, len - 1), "the write landed after it");
        }
    }

    @Test
    void solicitedOnlyNotificationIgnoresUnsolicitedSends() {
        try (Loopback l = Loopback.open()) {
            CompletionChannel channel = l.context.createCompletionChannel();
            CompletionQueue recvCq = l.context.createCompletionQueue(8, channel, 0);
            QueuePair receiver = l.pd.createQueuePair(new QueuePairConfig(l.cqB, recvCq, null, 4, 4, 1, 1, 0, false));
            QueuePair sender = l.pd.createQueuePair(QueuePairConfig.of(l.cqA, 4, 1, 1));
            try (MemoryRegion buf = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
                 ReceiveWorkRequests recv = ReceiveWorkRequests.allocate(2, 1);
                 SendWorkRequests send = SendWorkRequests.allocate(1, 1)) {
                receiver.connect(sender.localEndpoint(l.options), l.options);
                sender.connect(receiver.localEndpoint(l.options), l.options);
                recv.set(0, 1, buf, 0, 1024).set(1, 2, buf, 1024, 1024);
                receiver.postReceive(recv, 2);
                recvCq.requestNotify(true);

                send.get(0).reset().wrId(10).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED).sge(0, buf, 2048, 8).sgeCount(1);
                sender.postSend(send, 1);
                VerbsTestSupport.awaitCompletions(l.cqA, 1);
                assertNull(channel.awaitEvent(Duration.ofMillis(500)), "an unsolicited send raises no solicited event");

                send.get(0).reset().wrId(11).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED | SendFlags.SOLICITED)
                        .sge(0, buf, 2048, 8).sgeCount(1);
                sender.postSend(send, 1);
                CompletionQueue woke = channel.awaitEvent(VerbsTestSupport.TIMEOUT);
                assertSame(recvCq, woke);
                woke.acknowledgeEvents(1);
                assertEquals(2, VerbsTestSupport.awaitCompletions(recvCq, 2).size());
                assertEquals(0, buf.segment().get(ValueLayout.JAVA_BYTE, 0));
            } finally {
                receiver.close();
                sender.close();
                recvCq.close();
                channel.close();
            }
        }
    }
}
