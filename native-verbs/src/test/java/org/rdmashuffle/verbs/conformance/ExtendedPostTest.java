package org.rdmashuffle.verbs.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.ReceiveWorkRequests;
import org.rdmashuffle.verbs.ScatterGatherList;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendOps;
import org.rdmashuffle.verbs.VerbsException;
import org.rdmashuffle.verbs.WorkCompletionOpcode;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkRequestBuilder;

/**
 * Every data operation through the extended post path ({@code ibv_wr_start} … builder …
 * {@code ibv_wr_complete}); the other classes cover the same operations through
 * {@code ibv_post_send}. Also: abort posts nothing, a failed complete posts nothing.
 */
class ExtendedPostTest {
    private static final int BLOCK = 3000;

    @ParameterizedTest(name = "chain of {0}")
    @ValueSource(ints = {1, 16, 64})
    void rdmaReadChainWithTwoSgesEachAndOnlyTheLastSignaled(int length) {
        try (Loopback l = Loopback.openExtended(128, 2, 0);
             MemoryRegion remote = l.pd.allocateAndRegister((long) length * BLOCK, Access.REMOTE_READ | Access.LOCAL_WRITE);
             MemoryRegion local = l.pd.allocateAndRegister((long) length * BLOCK, Access.LOCAL_WRITE);
             ScatterGatherList sges = ScatterGatherList.allocate(2)) {
            for (long i = 0; i < remote.length(); i++) {
                remote.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + length));
            }
            WorkRequestBuilder b = l.a.workRequestBuilder();
            b.start();
            for (int i = 0; i < length; i++) {
                long off = (long) i * BLOCK;
                // Scatter each block's parts in swapped order, so a wrong SGE list cannot pass.
                sges.set(0, local, off + BLOCK - 1000, 1000).set(1, local, off, BLOCK - 1000);
                b.wrId(6000 + i).flags(i == length - 1 ? SendFlags.SIGNALED : 0)
                        .rdmaRead(remote.rkey(), remote.address() + off).sgeList(sges, 2);
            }
            b.complete();
            VerbsTestSupport.Completion c = VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst();
            assertEquals(WorkCompletionStatus.SUCCESS, c.status(), c::toString);
            assertEquals(6000 + length - 1, c.wrId());
            assertEquals(WorkCompletionOpcode.RDMA_READ, c.opcode());
            VerbsTestSupport.assertNoMoreCompletions(l.cqA, Duration.ofMillis(100));
            for (int i = 0; i < length; i++) {
                long off = (long) i * BLOCK;
                long tail = remote.segment().asSlice(off + 1000, BLOCK - 1000).mismatch(local.segment().asSlice(off, BLOCK - 1000));
                if (tail == 1000) {
                    // Exactly 2 x 1000 bytes moved: the request length was num_sge x the first SGE's length.
                    knownRxeBug(l, "wr_set_sge_list sums the first SGE's length num_sge times",
                            "406cd2ad0 \"rxe: Fix dma.length computation in wr_set_sge_list\"");
                }
                assertEquals(-1, remote.segment().asSlice(off, 1000).mismatch(local.segment().asSlice(off + BLOCK - 1000, 1000)));
                assertEquals(-1, tail, "block " + i);
            }
        }
    }

    @Test
    void writeAndWriteWithImmediate() {
        try (Loopback l = Loopback.openExtended(16, 1, 0);
             MemoryRegion src = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             MemoryRegion target = l.pd.allocateAndRegister(8192, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
             MemoryRegion spare = l.pd.allocateAndRegister(64, Access.LOCAL_WRITE);
             ReceiveWorkRequests recv = ReceiveWorkRequests.allocate(1, 1)) {
            src.segment().fill((byte) 0x61);
            recv.set(0, 31, spare, 0, 64);
            l.b.postReceive(recv, 1);
            WorkRequestBuilder b = l.a.workRequestBuilder();
            b.start();
            b.wrId(1).flags(SendFlags.SIGNALED).rdmaWrite(target.rkey(), target.address()).sge(src.lkey(), src.address(), 4096);
            b.wrId(2).flags(SendFlags.SIGNALED).rdmaWriteWithImmediate(target.rkey(), target.address() + 4096, 0x11223344)
                    .sge(src.lkey(), src.address(), 100);
            b.complete();
            List<VerbsTestSupport.Completion> done = VerbsTestSupport.awaitCompletions(l.cqA, 2);
            assertEquals(List.of(1L, 2L), done.stream().map(VerbsTestSupport.Completion::wrId).toList());
            done.forEach(c -> assertEquals(WorkCompletionOpcode.RDMA_WRITE, c.opcode(), c::toString));
            VerbsTestSupport.Completion r = VerbsTestSupport.awaitCompletions(l.cqB, 1).getFirst();
            assertEquals(WorkCompletionOpcode.RECV_RDMA_WITH_IMM, r.opcode());
            assertEquals(0x11223344, r.immediate());
            assertEquals(100, r.byteLength());
            assertEquals(0x61, target.segment().get(ValueLayout.JAVA_BYTE, 4095));
            assertEquals(0x61, target.segment().get(ValueLayout.JAVA_BYTE, 4096 + 99));
            assertEquals(0, target.segment().get(ValueLayout.JAVA_BYTE, 4096 + 100));
        }
    }

    @Test
    void sendAndZeroByteSendWithImmediate() {
        try (Loopback l = Loopback.openExtended(16, 1, 0);
             MemoryRegion src = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             MemoryRegion dst = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             ReceiveWorkRequests recv = ReceiveWorkRequests.allocate(2, 1)) {
            src.segment().fill((byte) 0x42);
            recv.set(0, 41, dst, 0, 2048).set(1, 42, dst, 2048, 2048);
            l.b.postReceive(recv, 2);
            WorkRequestBuilder b = l.a.workRequestBuilder();
            b.start();
            b.wrId(3).flags(SendFlags.SIGNALED).send().sge(src.lkey(), src.address(), 777);
            b.wrId(4).flags(SendFlags.SIGNALED).sendWithImmediate(0x0BADF00D); // no SGE: 0 bytes, like rpma_send_with_imm
            b.complete();
            List<VerbsTestSupport.Completion> sent = VerbsTestSupport.awaitCompletions(l.cqA, 2);
            sent.forEach(c -> assertEquals(WorkCompletionStatus.SUCCESS, c.status(), c::toString));
            List<VerbsTestSupport.Completion> got = VerbsTestSupport.awaitCompletions(l.cqB, 2);
            assertEquals(777, got.get(0).byteLength());
            assertEquals(42, got.get(1).wrId());
            assertEquals(0, got.get(1).byteLength());
            assertTrue(got.get(1).hasImmediate());
            assertEquals(0x0BADF00D, got.get(1).immediate());
        }
    }

    @Test
    void atomicsThroughTheBuilder() {
        try (Loopback l = Loopback.openExtended(16, 1, 0)) {
            Assumptions.assumeTrue(l.context.queryDevice().supportsAtomics(), "device has no atomics");
            try (MemoryRegion counter = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE | Access.REMOTE_ATOMIC);
                 MemoryRegion old = l.pd.allocateAndRegister(64, Access.LOCAL_WRITE)) {
                counter.segment().set(ValueLayout.JAVA_LONG, 0, 7L);
                WorkRequestBuilder b = l.a.workRequestBuilder();
                b.start();
                b.wrId(1).flags(SendFlags.SIGNALED).compareAndSwap(counter.rkey(), counter.address(), 7L, 70L)
                        .sge(old.lkey(), old.address(), 8);
                b.wrId(2).flags(SendFlags.SIGNALED).fetchAndAdd(counter.rkey(), counter.address(), 5L)
                        .sge(old.lkey(), old.address() + 8, 8);
                b.complete();
                List<VerbsTestSupport.Completion> done = VerbsTestSupport.awaitCompletions(l.cqA, 2);
                assertEquals(WorkCompletionOpcode.COMP_SWAP, done.get(0).opcode());
                assertEquals(WorkCompletionOpcode.FETCH_ADD, done.get(1).opcode());
                assertEquals(7L, old.segment().get(ValueLayout.JAVA_LONG, 0));
                assertEquals(70L, old.segment().get(ValueLayout.JAVA_LONG, 8));
                assertEquals(75L, counter.segment().get(ValueLayout.JAVA_LONG, 0));
            }
        }
    }

    @Test
    void inlineDataAndInlineDataList() {
        try (Loopback l = Loopback.openExtended(16, 1, 64);
             Arena arena = Arena.ofConfined();
             MemoryRegion dst = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             ReceiveWorkRequests recv = ReceiveWorkRequests.allocate(2, 1);
             ScatterGatherList parts = ScatterGatherList.allocate(2)) {
            Assumptions.assumeTrue(l.a.capabilities().maxInlineData() >= 32, "QP granted too few inline bytes");
            MemorySegment text = arena.allocateFrom("inline-hello");
            MemorySegment x = arena.allocateFrom("abc");
            MemorySegment y = arena.allocateFrom("XYZ");
            recv.set(0, 51, dst, 0, 1024).set(1, 52, dst, 1024, 1024);
            l.b.postReceive(recv, 2);
            WorkRequestBuilder b = l.a.workRequestBuilder();
            b.start();
            b.wrId(5).flags(SendFlags.SIGNALED | SendFlags.INLINE).send().inlineData(text.address(), 12);
            parts.set(0, x.address(), 3, 0).set(1, y.address(), 3, 0);
            b.wrId(6).flags(SendFlags.SIGNALED | SendFlags.INLINE).send().inlineDataList(parts, 2);
            text.fill((byte) 0); // copied when set: changing the source now changes nothing
            x.fill((byte) 0);
            b.complete();
            VerbsTestSupport.awaitCompletions(l.cqA, 2).forEach(c -> assertEquals(WorkCompletionStatus.SUCCESS, c.status()));
            VerbsTestSupport.awaitCompletions(l.cqB, 2);
            assertEquals("inline-hello", dst.segment().getString(0).substring(0, 12));
            String listed = new String(dst.segment().asSlice(1024, 6).toArray(ValueLayout.JAVA_BYTE));
            if (listed.equals("\0\0\0\0\0\0")) {
                knownRxeBug(l, "wr_set_inline_data_list does not set the request's length",
                        "1e8ed0aff \"providers/rxe: Fix missing length accumulation in wr_set_inline_data_list\"");
            }
            assertEquals("abcXYZ", listed);
        }
    }

    /**
     * rdma-core 44's rxe provider (Debian 12, the Soft-RoCE guest) has two bugs in the builder,
     * fixed upstream later. Where the result shows exactly that bug on an rxe device, the test is
     * skipped naming it; on any other device or provider the assertions stand.
     */
    private static void knownRxeBug(Loopback l, String bug, String fix) {
        if (l.target.device().name().startsWith("rxe")) {
            Assumptions.abort("the installed rdma-core rxe provider has a known bug: " + bug + " (fixed upstream in " + fix + ")");
        }
    }

    @Test
    void abortPostsNothing() {
        try (Loopback l = Loopback.openExtended(16, 1, 0);
             MemoryRegion remote = l.pd.allocateAndRegister(4096, Access.REMOTE_READ | Access.LOCAL_WRITE);
             MemoryRegion local = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE)) {
            WorkRequestBuilder b = l.a.workRequestBuilder();
            b.start();
            b.wrId(90).flags(SendFlags.SIGNALED).rdmaRead(remote.rkey(), remote.address()).sge(local.lkey(), local.address(), 64);
            b.abort();
            VerbsTestSupport.assertNoMoreCompletions(l.cqA, Duration.ofMillis(300));
            b.start();
            b.wrId(91).flags(SendFlags.SIGNALED).rdmaRead(remote.rkey(), remote.address()).sge(local.lkey(), local.address(), 64);
            b.complete();
            assertEquals(91, VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst().wrId(), "only the completed region was posted");
        }
    }

    @Test
    void failedCompletePostsNothingAndNamesTheCall() {
        try (Loopback l = Loopback.openExtended(16, 1, 0);
             MemoryRegion remote = l.pd.allocateAndRegister(4096, Access.REMOTE_READ | Access.LOCAL_WRITE);
             MemoryRegion local = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE)) {
            int tooMany = l.a.capabilities().maxSendSge() + 1;
            try (ScatterGatherList sges = ScatterGatherList.allocate(tooMany)) {
                for (int i = 0; i < tooMany; i++) {
                    sges.set(i, local, i * 8L, 8);
                }
                WorkRequestBuilder b = l.a.workRequestBuilder();
                b.start();
                b.wrId(80).flags(SendFlags.SIGNALED).rdmaRead(remote.rkey(), remote.address()).sge(local.lkey(), local.address(), 64);
                b.wrId(81).flags(SendFlags.SIGNALED).rdmaRead(remote.rkey(), remote.address()).sgeList(sges, tooMany);
                VerbsException e = assertThrows(VerbsException.class, b::complete);
                assertTrue(e.getMessage().startsWith("ibv_wr_complete failed: errno "), e.getMessage());
                assertTrue(e.errno() != 0);
                VerbsTestSupport.assertNoMoreCompletions(l.cqA, Duration.ofMillis(300));
                b.start();
                b.wrId(82).flags(SendFlags.SIGNALED).rdmaRead(remote.rkey(), remote.address()).sge(local.lkey(), local.address(), 64);
                b.complete();
                assertEquals(82, VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst().wrId());
            }
        }
    }

    @Test
    void unsupportedSendOpsRefuseTheQueuePair() {
        try (Loopback l = Loopback.open();
             CompletionQueue cq = l.context.createCompletionQueue(4, null, 0)) {
            VerbsException e = assertThrows(VerbsException.class,
                    () -> l.pd.createQueuePair(QueuePairConfig.of(cq, 4, 4, 1).withSendOps(SendOps.RDMA_READ | SendOps.TSO)));
            assertTrue(e.getMessage().startsWith("ibv_create_qp_ex failed: errno "), e.getMessage());
            assertTrue(e.getMessage().contains("TSO"), e.getMessage());
        }
    }

    @Test
    void classicQueuePairHasNoBuilder() {
        try (Loopback l = Loopback.open()) {
            IllegalStateException e = assertThrows(IllegalStateException.class, l.a::workRequestBuilder);
            assertTrue(e.getMessage().contains("withSendOps"), e.getMessage());
            QueuePair qp = l.a;
            assertTrue(qp.qpNumber() > 0);
        }
    }
}
