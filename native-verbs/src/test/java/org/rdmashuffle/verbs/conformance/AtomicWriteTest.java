package org.rdmashuffle.verbs.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
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
 * ATOMIC_WRITE ({@code ibv_wr_atomic_write}): 8 bytes written at the peer as one. The address must be
 * 8-byte aligned and the region writable by the peer; the failures land on the requester's QP as the
 * peer's answer says (an invalid request, a remote access error). A device without it refuses the QP
 * that asks for it, and {@code IBV_WR_ATOMIC_WRITE} through {@code ibv_post_send} is refused before
 * anything is posted (the struct has no field for the 8 bytes).
 */
class AtomicWriteTest {
    private static final long VALUE = 0x0123_4567_89ab_cdefL;

    private static boolean deviceWritesAtomically() {
        VerbsTestSupport.Target t = VerbsTestSupport.target();
        try (VerbsContext ctx = t.device().open()) {
            return ctx.queryDevice().supportsAtomicWrite();
        }
    }

    /** A loopback pair with atomic write and a 64-byte region of the peer with {@code access}, on a device that has it. */
    private static void onTarget(int access, java.util.function.BiConsumer<Loopback, MemoryRegion> test) {
        Assumptions.assumeTrue(deviceWritesAtomically(), "the device has no atomic write (rxe: Linux 6.2 and later)");
        try (Loopback l = Loopback.openFailFastWithSendOps(SendOps.ATOMIC_WRITE);
             MemoryRegion target = l.pd.allocateAndRegister(64, access)) {
            test.accept(l, target);
        }
    }

    /** Posts one signaled atomic write of {@link #VALUE} and returns its completion. */
    private static VerbsTestSupport.Completion atomicWrite(Loopback l, MemoryRegion target, long offset, long wrId) {
        WorkRequestBuilder b = l.a.workRequestBuilder();
        b.start();
        b.wrId(wrId).flags(SendFlags.SIGNALED).atomicWrite(target.rkey(), target.address() + offset, VALUE);
        b.complete();
        return VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst();
    }

    @Test
    void anAtomicWriteLandsItsEightBytesAndNothingAroundThem() {
        onTarget(Access.LOCAL_WRITE | Access.REMOTE_WRITE, (l, target) -> {
            VerbsTestSupport.Completion c = atomicWrite(l, target, 16, 1);
            assertEquals(WorkCompletionStatus.SUCCESS, c.status(), c::toString);
            assertEquals(1, c.wrId());
            assertEquals(WorkCompletionOpcode.ATOMIC_WRITE, c.opcode());
            assertEquals(VALUE, target.segment().get(ValueLayout.JAVA_LONG, 16));
            for (long i = 0; i < 64; i += 8) {
                if (i != 16) {
                    assertEquals(0L, target.segment().get(ValueLayout.JAVA_LONG, i), "bytes at " + i + " untouched");
                }
            }
        });
    }

    @Test
    void anAtomicWriteToAnUnalignedAddressIsAnInvalidRequest() {
        onTarget(Access.LOCAL_WRITE | Access.REMOTE_WRITE, (l, target) -> {
            VerbsTestSupport.Completion c = atomicWrite(l, target, 4, 2);
            assertEquals(WorkCompletionStatus.REM_INV_REQ_ERR, c.status(), c::toString);
            assertEquals(2, c.wrId());
            assertEquals(-1L, target.segment().mismatch(java.lang.foreign.MemorySegment.ofArray(new byte[64])),
                    "nothing written");
        });
    }

    @Test
    void anAtomicWriteToARegionThePeerMayNotWriteIsARemoteAccessError() {
        onTarget(Access.LOCAL_WRITE | Access.REMOTE_READ, (l, target) -> {
            VerbsTestSupport.Completion c = atomicWrite(l, target, 8, 3);
            assertEquals(WorkCompletionStatus.REM_ACCESS_ERR, c.status(), c::toString);
            assertEquals(3, c.wrId());
            assertEquals(0L, target.segment().get(ValueLayout.JAVA_LONG, 8), "nothing written");
        });
    }

    @Test
    void withoutAtomicWriteTheQueuePairAskingForItIsRefusedNamingTheOperation() {
        Assumptions.assumeFalse(deviceWritesAtomically(), "the device has atomic write");
        VerbsException e = assertThrows(VerbsException.class,
                () -> Loopback.openFailFastWithSendOps(SendOps.RDMA_WRITE | SendOps.ATOMIC_WRITE).close());
        assertEquals(Errno.EOPNOTSUPP, e.errno(), e::getMessage);
        assertTrue(e.getMessage().contains("ATOMIC_WRITE"), e.getMessage());
    }

    @Test
    void aQueuePairCreatedWithoutTheOperationRefusesItByName() {
        try (Loopback l = Loopback.openFailFastWithSendOps(SendOps.RDMA_WRITE)) {
            WorkRequestBuilder b = l.a.workRequestBuilder();
            b.start();
            try {
                IllegalStateException e = assertThrows(IllegalStateException.class, () -> b.atomicWrite(1, 0, VALUE));
                assertTrue(e.getMessage().contains("SendOps.ATOMIC_WRITE"), e.getMessage());
            } finally {
                b.abort();
            }
        }
    }

    @Test
    void atomicWriteThroughPostSendIsRefusedBeforeAnythingIsPosted() {
        try (SendWorkRequests chain = SendWorkRequests.allocate(1, 1)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> chain.get(0).reset().opcode(WorkRequestOpcode.ATOMIC_WRITE));
            assertTrue(e.getMessage().contains("ibv_wr_atomic_write"), e.getMessage());
        }
    }
}
