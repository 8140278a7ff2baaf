package org.rdmashuffle.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.ffi.ibv_recv_wr;
import org.rdmashuffle.verbs.ffi.ibv_send_wr;

/** The native chains are laid out, linked and terminated exactly as libibverbs reads them. No device needed. */
class SendWorkRequestsTest {
    private static final long WR = ibv_send_wr.layout().byteSize();

    @Test
    void requestsAreLinkedAndEachPointsAtItsOwnSgeSlots() {
        try (SendWorkRequests chain = SendWorkRequests.allocate(4, 3)) {
            MemorySegment m = chain.memory();
            for (int i = 0; i < 4; i++) {
                long next = m.get(ValueLayout.JAVA_LONG, i * WR + ibv_send_wr.next$offset());
                assertEquals(i < 3 ? m.address() + (i + 1) * WR : 0L, next, "next of #" + i);
                long sgList = m.get(ValueLayout.JAVA_LONG, i * WR + ibv_send_wr.sg_list$offset());
                assertEquals(m.address() + 4 * WR + i * 3L * 16, sgList, "sg_list of #" + i);
            }
        }
    }

    @Test
    void copyingRequestsIntoALargerChain_carriesTheirFieldsAndSges_andKeepsItsOwnLinks() {
        try (SendWorkRequests small = SendWorkRequests.allocate(2, 2);
             SendWorkRequests large = SendWorkRequests.allocate(4, 3)) {
            small.get(0).reset().wrId(11).opcode(WorkRequestOpcode.RDMA_READ).flags(SendFlags.SIGNALED).remote(0x1000, 7)
                    .sge(0, 0x2000, 100, 3).sge(1, 0x3000, 200, 4).sgeCount(2);
            small.get(1).reset().wrId(12).opcode(WorkRequestOpcode.SEND_WITH_IMM).immediate(0x01020304)
                    .sge(0, 0x4000, 50, 5).sgeCount(1);
            large.copyFrom(small, 2);
            SendWorkRequest a = large.get(0);
            assertEquals(11, a.wrId());
            assertEquals(WorkRequestOpcode.RDMA_READ.code(), a.opcodeCode());
            assertEquals(SendFlags.SIGNALED, a.flags());
            assertEquals(0x1000, a.remoteAddress());
            assertEquals(7, a.rkey());
            assertEquals(2, a.sgeCount());
            assertEquals(0x3000, a.sgeAddress(1));
            assertEquals(200, a.sgeLength(1));
            assertEquals(4, a.sgeLkey(1));
            SendWorkRequest b = large.get(1);
            assertEquals(12, b.wrId());
            assertEquals(0x01020304, b.immediate());
            assertEquals(0x4000, b.sgeAddress(0));
            MemorySegment m = large.memory();
            for (int i = 0; i < 4; i++) { // its own links, not the small chain's
                assertEquals(i < 3 ? m.address() + (i + 1) * WR : 0L, m.get(ValueLayout.JAVA_LONG, i * WR + ibv_send_wr.next$offset()));
                assertEquals(m.address() + 4 * WR + i * 3L * 16, m.get(ValueLayout.JAVA_LONG, i * WR + ibv_send_wr.sg_list$offset()));
            }
            assertThrows(IllegalArgumentException.class, () -> small.copyFrom(large, 2), "fewer SGE slots than the source's");
            assertThrows(IllegalArgumentException.class, () -> large.copyFrom(small, 3), "more than the source holds");
        }
    }

    @Test
    void postingAPrefixTerminatesItAndRelinksAfterwards() {
        try (SendWorkRequests chain = SendWorkRequests.allocate(4, 1)) {
            MemorySegment m = chain.memory();
            assertEquals(m.address(), chain.beginPost(2));
            assertEquals(0L, m.get(ValueLayout.JAVA_LONG, WR + ibv_send_wr.next$offset()), "#1 ends the posted chain");
            chain.endPost(2);
            assertEquals(m.address() + 2 * WR, m.get(ValueLayout.JAVA_LONG, WR + ibv_send_wr.next$offset()));
            chain.beginPost(4);
            chain.endPost(4);
            assertEquals(0L, m.get(ValueLayout.JAVA_LONG, 3 * WR + ibv_send_wr.next$offset()));
            assertThrows(IllegalArgumentException.class, () -> chain.beginPost(0));
            assertThrows(IllegalArgumentException.class, () -> chain.beginPost(5));
            assertEquals(2, chain.indexOf(m.address() + 2 * WR));
            assertEquals(-1, chain.indexOf(m.address() + 2 * WR + 8));
            assertEquals(-1, chain.indexOf(m.address() + 4 * WR));
        }
    }

    @Test
    void fieldsRoundTripAndImmediateIsBigEndianInMemory() {
        try (SendWorkRequests chain = SendWorkRequests.allocate(2, 2)) {
            SendWorkRequest r = chain.get(1).reset().wrId(0x1122334455667788L).opcode(WorkRequestOpcode.RDMA_WRITE_WITH_IMM)
                    .flags(SendFlags.SIGNALED | SendFlags.FENCE).immediate(0x01020304).remote(0xABCDEF00L, 77)
                    .sge(0, 0x1000, 10, 5).sge(1, 0x2000, 20, 6).sgeCount(2);
            assertEquals(0x1122334455667788L, r.wrId());
            assertEquals(WorkRequestOpcode.RDMA_WRITE_WITH_IMM.code(), r.opcodeCode());
            assertEquals(SendFlags.SIGNALED | SendFlags.FENCE, r.flags());
            assertEquals(0x01020304, r.immediate());
            assertEquals(0x01, chain.memory().get(ValueLayout.JAVA_BYTE, WR + ibv_send_wr.imm_data$offset()), "network order");
            assertEquals(0xABCDEF00L, r.remoteAddress());
            assertEquals(77, r.rkey());
            assertEquals(2, r.sgeCount());
            assertEquals(0x2000, r.sgeAddress(1));
            assertEquals(20, r.sgeLength(1));
            assertEquals(6, r.sgeLkey(1));
            r.compareAndSwap(0x5000, 9, 1, 2);
            assertEquals(WorkRequestOpcode.ATOMIC_CMP_AND_SWP.code(), r.opcodeCode());
            assertEquals(0x5000, r.atomicRemoteAddress());
            assertEquals(9, r.atomicRkey());
            assertEquals(1, r.compareAdd());
            assertEquals(2, r.swap());
            r.reset();
            assertEquals(0, r.opcodeCode());
            assertEquals(0, r.sgeCount());
            assertEquals(0, r.flags());
            assertEquals(0x1122334455667788L, r.wrId(), "reset keeps wr_id (set per post anyway)");
        }
    }

    @Test
    void sgeBoundsAreChecked() {
        try (SendWorkRequests chain = SendWorkRequests.allocate(1, 2)) {
            SendWorkRequest r = chain.get(0);
            assertThrows(IndexOutOfBoundsException.class, () -> r.sge(2, 0, 1, 1));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> r.sgeCount(3));
            assertTrue(e.getMessage().contains("2 slots"), e.getMessage());
        }
    }

    @Test
    void ipChecksumOffload_isRefusedOnTheRcQueuePairsThisApiMakes_namingTheQpType() {
        try (SendWorkRequests chain = SendWorkRequests.allocate(2, 1)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> chain.get(1).flags(SendFlags.SIGNALED | SendFlags.IP_CSUM));
            assertTrue(e.getMessage().startsWith("work request 1: IBV_SEND_IP_CSUM is for UD and raw-packet queue pairs")
                    && e.getMessage().contains("RC"), e.getMessage());
            chain.get(1).flags(SendFlags.SIGNALED); // the other flags still go
            assertEquals("SIGNALED|IP_CSUM", SendFlags.describe(SendFlags.SIGNALED | SendFlags.IP_CSUM));
        }
    }

    @Test
    void sgeFromARegionRefusesRangesOutsideIt() {
        try (Arena arena = Arena.ofConfined(); SendWorkRequests chain = SendWorkRequests.allocate(1, 1)) {
            MemoryRegion region = new FakeRegion(arena.allocate(1024));
            chain.get(0).sge(0, region, 1000, 24);
            IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class,
                    () -> chain.get(0).sge(0, region, 1000, 25));
            assertTrue(e.getMessage().contains("[1000, 1000 + 25)"), e.getMessage());
        }
    }

    @Test
    void receiveChainsAreLinkedAndChecked() {
        long wr = ibv_recv_wr.layout().byteSize();
        try (Arena arena = Arena.ofConfined(); ReceiveWorkRequests chain = ReceiveWorkRequests.allocate(3, 1)) {
            MemoryRegion region = new FakeRegion(arena.allocate(300));
            chain.set(2, 99, region, 200, 100);
            assertEquals(99, chain.wrId(2));
            assertEquals(region.address() + 200, chain.sgeAddress(2, 0));
            assertEquals(100, chain.sgeLength(2, 0));
            assertEquals(1, chain.sgeCount(2));
            assertThrows(IndexOutOfBoundsException.class, () -> chain.set(2, 99, region, 201, 100));
            chain.beginPost(1);
            assertEquals(0L, chain.memory().get(ValueLayout.JAVA_LONG, ibv_recv_wr.next$offset()));
            chain.endPost(1);
            assertEquals(chain.memory().address() + wr, chain.memory().get(ValueLayout.JAVA_LONG, ibv_recv_wr.next$offset()));
        }
    }

    /** A region over plain memory, for checks that never reach a device. */
    private record FakeRegion(MemorySegment segment) implements MemoryRegion {
        public int lkey() {
            return 1;
        }

        public int rkey() {
            return 2;
        }

        public int access() {
            return Access.LOCAL_WRITE;
        }

        public void close() {
        }
    }
}
