package org.rdmashuffle.verbs.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendOps;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsException;
import org.rdmashuffle.verbs.WorkCompletionOpcode;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkRequestBuilder;
import org.rdmashuffle.verbs.WorkRequestOpcode;

/**
 * FLUSH ({@code ibv_wr_flush}): after RDMA writes, a flush completes once they are globally
 * visible at the peer; a region registered without FLUSH access refuses it. The responding QP must
 * allow FLUSH too ({@code qp_access_flags}; rxe answers an invalid request otherwise). A device or library
 * without FLUSH refuses the QP that asks for it, and {@code IBV_WR_FLUSH} through
 * {@code ibv_post_send} is refused before anything is posted (the struct has no fields for it).
 */
class FlushTest {

    private static boolean deviceFlushes() {
        VerbsTestSupport.Target t = VerbsTestSupport.target();
        try (VerbsContext ctx = t.device().open()) {
            return ctx.queryDevice().supportsFlush();
        }
    }

    @Test
    void aFlushAfterWritesCompletesAndTheBytesAreThere() {
        Assumptions.assumeTrue(deviceFlushes(), "the device has no FLUSH (rxe: Linux 6.2 and later)");
        try (Loopback l = Loopback.openFailFastWithSendOps(SendOps.RDMA_WRITE | SendOps.FLUSH, Access.FLUSH_GLOBAL);
             MemoryRegion target = l.pd.allocateAndRegister(8192, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.FLUSH_GLOBAL);
             MemoryRegion source = l.pd.allocateAndRegister(8192, Access.LOCAL_WRITE)) {
            for (int i = 0; i < 8192; i++) {
                source.segment().set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (i * 13));
            }
            WorkRequestBuilder b = l.a.workRequestBuilder();
            b.start();
            b.wrId(1).flags(0).rdmaWrite(target.rkey(), target.address()).sge(source.lkey(), source.address(), 8192);
            b.wrId(2).flags(SendFlags.SIGNALED).flush(target.rkey(), target.address(), 8192, WorkRequestBuilder.FLUSH_GLOBAL,
                    WorkRequestBuilder.FLUSH_RANGE);
            b.complete();
            VerbsTestSupport.Completion c = VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst();
            assertEquals(WorkCompletionStatus.SUCCESS, c.status(), c::toString);
            assertEquals(2, c.wrId());
            assertEquals(WorkCompletionOpcode.FLUSH, c.opcode());
            assertEquals(-1L, target.segment().mismatch(source.segment()));
        }
    }

    @Test
    void aFlushOfARegionWithoutFlushAccessIsRefused() {
        Assumptions.assumeTrue(deviceFlushes(), "the device has no FLUSH (rxe: Linux 6.2 and later)");
        try (Loopback l = Loopback.openFailFastWithSendOps(SendOps.RDMA_WRITE | SendOps.FLUSH, Access.FLUSH_GLOBAL);
             MemoryRegion target = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE)) {
            WorkRequestBuilder b = l.a.workRequestBuilder();
            b.start();
            b.wrId(3).flags(SendFlags.SIGNALED).flush(target.rkey(), target.address(), 4096, WorkRequestBuilder.FLUSH_GLOBAL,
                    WorkRequestBuilder.FLUSH_RANGE);
            b.complete();
            VerbsTestSupport.Completion c = VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst();
            assertEquals(WorkCompletionStatus.REM_ACCESS_ERR, c.status(), c::toString);
            assertEquals(3, c.wrId());
        }
    }

    @Test
    void withoutFlushTheQueuePairAskingForItIsRefusedNamingTheOperation() {
        Assumptions.assumeFalse(deviceFlushes(), "the device has FLUSH");
        VerbsException e = assertThrows(VerbsException.class,
                () -> Loopback.openFailFastWithSendOps(SendOps.RDMA_WRITE | SendOps.FLUSH).close());
        assertEquals(Errno.EOPNOTSUPP, e.errno(), e::getMessage);
        assertTrue(e.getMessage().contains("FLUSH"), e.getMessage());
    }

    @Test
    void flushThroughPostSendIsRefusedBeforeAnythingIsPosted() {
        try (SendWorkRequests chain = SendWorkRequests.allocate(1, 1)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> chain.get(0).reset().opcode(WorkRequestOpcode.FLUSH));
            assertTrue(e.getMessage().contains("ibv_wr_flush"), e.getMessage());
        }
    }
}
