package org.rdmashuffle.verbs.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.ReceiveWorkRequests;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletionOpcode;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkRequestOpcode;

/** One-sided RDMA_WRITE, and RDMA_WRITE_WITH_IMM which also consumes a receive at the target. */
class RdmaWriteTest {

    @Test
    void writeLandsInRemoteMemoryWithoutAReceive() {
        try (Loopback l = Loopback.open();
             MemoryRegion src = l.pd.allocateAndRegister(8192, Access.LOCAL_WRITE);
             MemoryRegion target = l.pd.allocateAndRegister(8192, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
             SendWorkRequests chain = SendWorkRequests.allocate(1, 2)) {
            for (int i = 0; i < 2048; i++) {
                src.segment().set(ValueLayout.JAVA_INT, i * 4L, i ^ 0x5A5A5A5A);
            }
            chain.get(0).reset().wrId(77).opcode(WorkRequestOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .remote(target.address() + 100, target.rkey())
                    .sge(0, src, 0, 4000).sge(1, src, 4000, 4000).sgeCount(2);
            l.a.postSend(chain, 1);
            VerbsTestSupport.Completion c = VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst();
            assertEquals(WorkCompletionStatus.SUCCESS, c.status());
            assertEquals(WorkCompletionOpcode.RDMA_WRITE, c.opcode());
            assertEquals(-1, src.segment().asSlice(0, 8000).mismatch(target.segment().asSlice(100, 8000)));
            assertEquals(0, target.segment().get(ValueLayout.JAVA_BYTE, 99), "nothing before the target range");
        }
    }

    @Test
    void writeWithImmediateCompletesAReceiveAtTheTarget() {
        try (Loopback l = Loopback.open();
             MemoryRegion src = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             MemoryRegion target = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
             MemoryRegion unused = l.pd.allocateAndRegister(64, Access.LOCAL_WRITE);
             ReceiveWorkRequests recv = ReceiveWorkRequests.allocate(1, 1);
             SendWorkRequests chain = SendWorkRequests.allocate(1, 1)) {
            src.segment().fill((byte) 0x3C);
            recv.set(0, 404, unused, 0, 64);
            l.b.postReceive(recv, 1);
            chain.get(0).reset().wrId(78).opcode(WorkRequestOpcode.RDMA_WRITE_WITH_IMM).immediate(0x7654321)
                    .flags(SendFlags.SIGNALED).remote(target.address(), target.rkey()).sge(0, src, 0, 2048).sgeCount(1);
            l.a.postSend(chain, 1);
            assertEquals(WorkCompletionStatus.SUCCESS, VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst().status());
            VerbsTestSupport.Completion r = VerbsTestSupport.awaitCompletions(l.cqB, 1).getFirst();
            assertEquals(WorkCompletionStatus.SUCCESS, r.status());
            assertEquals(404, r.wrId());
            assertEquals(WorkCompletionOpcode.RECV_RDMA_WITH_IMM, r.opcode());
            assertTrue(r.hasImmediate());
            assertEquals(0x7654321, r.immediate());
            assertEquals(2048, r.byteLength());
            assertEquals((byte) 0x3C, target.segment().get(ValueLayout.JAVA_BYTE, 2047));
            assertEquals(0, unused.segment().get(ValueLayout.JAVA_BYTE, 0), "the receive buffer is not written");
        }
    }
}
