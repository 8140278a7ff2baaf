package org.rdmashuffle.verbs.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.ReceiveWorkRequests;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletionOpcode;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkRequestOpcode;

/** Two-sided SEND / SEND_WITH_IMM into receives posted on the peer's own receive queue. */
class SendReceiveTest {

    @Test
    void sendLandsInThePostedReceive() {
        try (Loopback l = Loopback.open();
             MemoryRegion src = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             MemoryRegion dst = l.pd.allocateAndRegister(8192, Access.LOCAL_WRITE);
             ReceiveWorkRequests recv = ReceiveWorkRequests.allocate(2, 1);
             SendWorkRequests send = SendWorkRequests.allocate(2, 1)) {
            for (int i = 0; i < 1000; i++) {
                src.segment().set(ValueLayout.JAVA_INT, i * 4L, i);
            }
            recv.set(0, 700, dst, 0, 2048).set(1, 701, dst, 2048, 4096);
            l.b.postReceive(recv, 2);
            send.get(0).reset().wrId(1).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, src, 0, 1000).sgeCount(1);
            send.get(1).reset().wrId(2).opcode(WorkRequestOpcode.SEND_WITH_IMM).immediate(0xCAFEBABE)
                    .flags(SendFlags.SIGNALED).sge(0, src, 1000, 3000).sgeCount(1);
            l.a.postSend(send, 2);

            List<VerbsTestSupport.Completion> sent = VerbsTestSupport.awaitCompletions(l.cqA, 2);
            assertEquals(List.of(1L, 2L), sent.stream().map(VerbsTestSupport.Completion::wrId).toList());
            sent.forEach(c -> assertEquals(WorkCompletionOpcode.SEND, c.opcode(), c::toString));

            List<VerbsTestSupport.Completion> got = VerbsTestSupport.awaitCompletions(l.cqB, 2);
            VerbsTestSupport.Completion first = got.getFirst();
            assertEquals(WorkCompletionStatus.SUCCESS, first.status());
            assertEquals(700, first.wrId());
            assertEquals(WorkCompletionOpcode.RECV, first.opcode());
            assertEquals(1000, first.byteLength());
            assertFalse(first.hasImmediate());
            assertEquals(l.b.qpNumber(), first.qpNumber());
            assertTrue(src.segment().asSlice(0, 1000).mismatch(dst.segment().asSlice(0, 1000)) == -1);
            VerbsTestSupport.Completion second = got.get(1);
            assertEquals(701, second.wrId(), "receives complete in the order they were posted");
            assertEquals(3000, second.byteLength());
            assertTrue(second.hasImmediate());
            assertEquals(0xCAFEBABE, second.immediate());
            assertTrue(src.segment().asSlice(1000, 3000).mismatch(dst.segment().asSlice(2048, 3000)) == -1);
        }
    }

    @Test
    void sendWithoutAPostedReceiveRetriesThenFailsWithReceiverNotReady() {
        try (Loopback l = Loopback.openFailFast(); // rnr_retry 1: give up after one retry
             MemoryRegion src = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             SendWorkRequests send = SendWorkRequests.allocate(1, 1)) {
            send.get(0).reset().wrId(9).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, src, 0, 64).sgeCount(1);
            l.a.postSend(send, 1);
            VerbsTestSupport.Completion c = VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst();
            assertEquals(9, c.wrId());
            assertEquals(WorkCompletionStatus.RNR_RETRY_EXC_ERR, c.status(), c::toString);
            assertEquals(org.rdmashuffle.verbs.QueuePairState.ERR, l.a.query().state());
        }
    }

    @Test
    void messageLargerThanTheReceiveBufferFailsBothSides() {
        try (Loopback l = Loopback.openFailFast();
             MemoryRegion src = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             MemoryRegion dst = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             ReceiveWorkRequests recv = ReceiveWorkRequests.allocate(1, 1);
             SendWorkRequests send = SendWorkRequests.allocate(1, 1)) {
            recv.set(0, 800, dst, 0, 1024);
            l.b.postReceive(recv, 1);
            send.get(0).reset().wrId(8).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED)
                    .sge(0, src, 0, 2048).sgeCount(1);
            l.a.postSend(send, 1);
            VerbsTestSupport.Completion sent = VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst();
            assertEquals(WorkCompletionStatus.REM_OP_ERR, sent.status(), sent::toString);
            VerbsTestSupport.Completion received = VerbsTestSupport.awaitCompletions(l.cqB, 1).getFirst();
            assertEquals(800, received.wrId());
            assertTrue(received.status() != WorkCompletionStatus.SUCCESS, received::toString);
        }
    }

    @Test
    void sendWithImmediateCarriesItInHostOrder() {
        try (Loopback l = Loopback.open();
             MemoryRegion src = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             MemoryRegion dst = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             ReceiveWorkRequests recv = ReceiveWorkRequests.allocate(1, 1);
             SendWorkRequests send = SendWorkRequests.allocate(1, 1)) {
            recv.set(0, 9, dst, 0, 4096);
            l.b.postReceive(recv, 1);
            send.get(0).reset().wrId(3).opcode(WorkRequestOpcode.SEND_WITH_IMM).immediate(0x01020304)
                    .flags(SendFlags.SIGNALED).sge(0, src, 0, 128).sgeCount(1);
            l.a.postSend(send, 1);
            VerbsTestSupport.awaitCompletions(l.cqA, 1);
            VerbsTestSupport.Completion c = VerbsTestSupport.awaitCompletions(l.cqB, 1).getFirst();
            assertTrue(c.hasImmediate());
            assertEquals(0x01020304, c.immediate());
            assertEquals(128, c.byteLength());
        }
    }

    @Test
    void unsignaledSendsProduceNoCompletion() {
        try (Loopback l = Loopback.open();
             MemoryRegion src = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             MemoryRegion dst = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             ReceiveWorkRequests recv = ReceiveWorkRequests.allocate(3, 1);
             SendWorkRequests send = SendWorkRequests.allocate(3, 1)) {
            for (int i = 0; i < 3; i++) {
                recv.set(i, 100 + i, dst, i * 1024L, 1024);
                send.get(i).reset().wrId(i).opcode(WorkRequestOpcode.SEND)
                        .flags(i == 2 ? SendFlags.SIGNALED : 0).sge(0, src, 0, 16).sgeCount(1);
            }
            l.b.postReceive(recv, 3);
            l.a.postSend(send, 3);
            assertEquals(List.of(2L), VerbsTestSupport.awaitCompletions(l.cqA, 1).stream()
                    .map(VerbsTestSupport.Completion::wrId).toList());
            VerbsTestSupport.assertNoMoreCompletions(l.cqA, Duration.ofMillis(200));
            assertEquals(3, VerbsTestSupport.awaitCompletions(l.cqB, 3).size());
        }
    }
}
