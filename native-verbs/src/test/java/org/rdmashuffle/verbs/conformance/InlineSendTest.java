package org.rdmashuffle.verbs.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.ReceiveWorkRequests;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkRequestOpcode;

/** INLINE sends copy the bytes at post time: the source needs no registration and may change after. */
class InlineSendTest {

    @Test
    void inlineSendFromUnregisteredMemory() {
        try (Loopback l = Loopback.open(16, 1, 64);
             Arena arena = Arena.ofConfined();
             MemoryRegion dst = l.pd.allocateAndRegister(256, Access.LOCAL_WRITE);
             ReceiveWorkRequests recv = ReceiveWorkRequests.allocate(1, 1);
             SendWorkRequests send = SendWorkRequests.allocate(1, 1)) {
            int inline = l.a.capabilities().maxInlineData();
            Assumptions.assumeTrue(inline >= 32, "QP granted only " + inline + " inline bytes");
            MemorySegment msg = arena.allocate(32);
            for (int i = 0; i < 32; i++) {
                msg.set(ValueLayout.JAVA_BYTE, i, (byte) ('a' + i % 26));
            }
            recv.set(0, 1, dst, 0, 256);
            l.b.postReceive(recv, 1);
            send.get(0).reset().wrId(11).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED | SendFlags.INLINE)
                    .sge(0, msg.address(), 32, 0).sgeCount(1);
            l.a.postSend(send, 1);
            msg.fill((byte) 0); // inline: the bytes were copied at post time
            assertEquals(WorkCompletionStatus.SUCCESS, VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst().status());
            VerbsTestSupport.Completion r = VerbsTestSupport.awaitCompletions(l.cqB, 1).getFirst();
            assertEquals(32, r.byteLength());
            assertEquals('a', dst.segment().get(ValueLayout.JAVA_BYTE, 0));
            assertEquals('a' + 31 % 26, dst.segment().get(ValueLayout.JAVA_BYTE, 31));
            assertTrue(l.a.capabilities().maxInlineData() >= 32);
        }
    }
}
