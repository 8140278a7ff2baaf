package org.rdmashuffle.verbs.software;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendOps;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsException;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkCompletions;
import org.rdmashuffle.verbs.WorkRequestBuilder;

/**
 * The software provider's {@code ibv_wr_*} chain starts at {@link SoftWorkRequestBuilder#INITIAL_CHAIN}
 * requests and doubles as a chain being built needs, up to the QP's {@code max_send_wr}: requests
 * (inline ones too) filled before a growth are posted as they were set, and a chain past
 * {@code max_send_wr} is refused whole, as before.
 */
class SoftWorkRequestBuilderTest {
    private static final int MAX_SEND_WR = 128;
    private static final int MAX_SGE = 2;
    private static final int MAX_INLINE = 64;
    private static final int SLOT = 32;

    /** Two software devices, one RC QP each made for the builder, connected. */
    private static final class BuilderPair implements AutoCloseable {
        final SoftwareProvider a = new SoftwareProvider(SoftwareProvider.Config.loopback());
        final SoftwareProvider b = new SoftwareProvider(SoftwareProvider.Config.loopback());
        final VerbsContext contextA = a.devices().getFirst().open();
        final VerbsContext contextB = b.devices().getFirst().open();
        final ProtectionDomain pdA = contextA.allocateProtectionDomain();
        final ProtectionDomain pdB = contextB.allocateProtectionDomain();
        final CompletionQueue cqA = contextA.createCompletionQueue(1024, null, 0);
        final CompletionQueue cqB = contextB.createCompletionQueue(1024, null, 0);
        final QueuePair qpA = pdA.createQueuePair(QueuePairConfig.of(cqA, MAX_SEND_WR, 16, MAX_SGE)
                .withMaxInlineData(MAX_INLINE).withSendOps(SendOps.RDMA_WRITE | SendOps.RDMA_READ | SendOps.SEND));
        final QueuePair qpB = pdB.createQueuePair(QueuePairConfig.of(cqB, MAX_SEND_WR, 16, MAX_SGE));

        BuilderPair() {
            qpA.connect(qpB.localEndpoint(SoftwarePair.OPTIONS), SoftwarePair.OPTIONS);
            qpB.connect(qpA.localEndpoint(SoftwarePair.OPTIONS), SoftwarePair.OPTIONS);
        }

        SoftWorkRequestBuilder builder() {
            return (SoftWorkRequestBuilder) qpA.workRequestBuilder();
        }

        @Override
        public void close() {
            qpA.close();
            qpB.close();
            a.close();
            b.close();
        }
    }

    @Test
    void theChainStartsSmall_andAChainLongerThanThatPostsEveryRequestAsSet_inlineOnesToo() throws Exception {
        int requests = 5 * SoftWorkRequestBuilder.INITIAL_CHAIN + 3; // three growths
        try (BuilderPair p = new BuilderPair();
             Arena arena = Arena.ofConfined();
             MemoryRegion source = p.pdA.allocateAndRegister((long) requests * SLOT, Access.LOCAL_WRITE);
             MemoryRegion target = p.pdB.allocateAndRegister((long) requests * SLOT, Access.LOCAL_WRITE | Access.REMOTE_WRITE)) {
            SoftWorkRequestBuilder b = p.builder();
            assertEquals(SoftWorkRequestBuilder.INITIAL_CHAIN, b.chainCapacity());
            long whole;
            try (SendWorkRequests full = SendWorkRequests.allocate(MAX_SEND_WR, MAX_SGE + 1)) {
                whole = full.memory().byteSize() + (long) MAX_SEND_WR * MAX_INLINE;
            }
            assertTrue(b.nativeBytes() * 8 <= whole, "a new QP's chain holds " + b.nativeBytes() + " bytes, "
                    + whole + " at max_send_wr");

            for (int i = 0; i < requests; i++) {
                source.segment().asSlice((long) i * SLOT, SLOT).fill((byte) (i + 1));
            }
            MemorySegment inline = arena.allocate(SLOT);
            WorkRequestBuilder w = p.qpA.workRequestBuilder();
            w.start();
            for (int i = 0; i < requests; i++) {
                w.wrId(100 + i).flags(i == requests - 1 ? SendFlags.SIGNALED : 0)
                        .rdmaWrite(target.rkey(), target.address() + (long) i * SLOT);
                if (i % 3 == 0) { // inline: staged now, its staging moved with each growth after
                    inline.fill((byte) (i + 1));
                    w.inlineData(inline.address(), SLOT);
                } else {
                    w.sge(source.lkey(), source.address() + (long) i * SLOT, SLOT);
                }
            }
            inline.fill((byte) 0); // copied when set: the source's later bytes change nothing
            w.complete();
            assertEquals(List.of(100L + requests - 1), completions(p.cqA, 1));
            for (int i = 0; i < requests; i++) {
                MemorySegment got = target.segment().asSlice((long) i * SLOT, SLOT);
                for (int j = 0; j < SLOT; j++) {
                    assertEquals((byte) (i + 1), got.get(ValueLayout.JAVA_BYTE, j), "request " + i + ", byte " + j);
                }
            }
            assertEquals(8 * SoftWorkRequestBuilder.INITIAL_CHAIN, b.chainCapacity(), "doubled as needed, no further");
        }
    }

    @Test
    void aChainPastMaxSendWr_isRefusedWhole_andTheChainStopsGrowingThere() throws Exception {
        try (BuilderPair p = new BuilderPair();
             MemoryRegion source = p.pdA.allocateAndRegister(64, Access.LOCAL_WRITE);
             MemoryRegion target = p.pdB.allocateAndRegister(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE)) {
            WorkRequestBuilder w = p.qpA.workRequestBuilder();
            w.start();
            for (int i = 0; i <= MAX_SEND_WR; i++) {
                w.wrId(i).flags(SendFlags.SIGNALED).rdmaWrite(target.rkey(), target.address()).sge(source.lkey(), source.address(), 8);
            }
            VerbsException e = assertThrows(VerbsException.class, w::complete);
            assertEquals(Errno.ENOMEM, e.errno(), e.getMessage());
            assertEquals(MAX_SEND_WR, p.builder().chainCapacity());
            assertEquals(List.of(), completions(p.cqA, 0), "nothing of it was posted");

            w.start(); // and the grown chain posts a chain of max_send_wr
            for (int i = 0; i < MAX_SEND_WR; i++) {
                w.wrId(i).flags(i == MAX_SEND_WR - 1 ? SendFlags.SIGNALED : 0).rdmaWrite(target.rkey(), target.address())
                        .sge(source.lkey(), source.address(), 8);
            }
            w.complete();
            assertEquals(List.of((long) MAX_SEND_WR - 1), completions(p.cqA, 1));
        }
    }

    /** The wr_ids of {@code n} completions, each a success, waiting up to 10 s; then checks no more come for 100 ms. */
    private static List<Long> completions(CompletionQueue cq, int n) throws InterruptedException {
        List<Long> ids = new ArrayList<>();
        long deadline = System.nanoTime() + 10_000_000_000L;
        try (WorkCompletions wcs = WorkCompletions.allocate(16)) {
            while (ids.size() < n && System.nanoTime() < deadline) {
                int got = cq.poll(wcs);
                for (int i = 0; i < got; i++) {
                    assertEquals(WorkCompletionStatus.SUCCESS, wcs.status(i));
                    ids.add(wcs.wrId(i));
                }
                if (got == 0) {
                    Thread.sleep(1);
                }
            }
            Thread.sleep(100);
            int more = cq.poll(wcs);
            assertEquals(0, more, "more completions than expected");
        }
        return ids;
    }
}
