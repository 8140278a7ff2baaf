package org.rdmashuffle.verbs.crosshost;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.QueuePairState;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletionOpcode;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkRequestBuilder;
import org.rdmashuffle.verbs.WorkRequestOpcode;
import org.rdmashuffle.verbs.conformance.VerbsTestSupport;

/**
 * The verbs that involve a peer, with the peer on another host's device across a link (the Soft-RoCE
 * pair: two guests, each with its own rxe, on one wire): RC connect, RDMA_READ chains (through
 * ibv_post_send and the builder), RDMA_WRITE, SEND/RECV into a shared receive queue both ways,
 * atomics, and the error completions of a wrong rkey and a read past a region. The far side is
 * {@link RemotePeerAgent}; without one configured every test skips with the command that runs it.
 */
class CrossHostVerbsTest {
    private static final PeerWire.Setup PLAIN = new PeerWire.Setup(64 << 10, 0, 0, false);

    @Test
    void queuePairsOnTwoHostsConnectAndReachReadyToSend() throws Exception {
        try (RemotePeer p = RemotePeer.connect(PLAIN, PLAIN, false)) {
            assertEquals(QueuePairState.RTS, p.local.qp.query().state());
            assertEquals(QueuePairState.RTS, p.agentState());
        }
    }

    @Test
    void aReadChainOfSixteenRequestsWithTwoSgesEach_onlyTheLastSignaled_bringsTheirBytes() throws Exception {
        try (RemotePeer p = RemotePeer.connect(PLAIN, PLAIN, false);
             SendWorkRequests chain = SendWorkRequests.allocate(16, 2)) {
            byte[] theirs = p.fill(41, PLAIN.dataBytes());
            for (int i = 0; i < 16; i++) {
                long off = i * 4096L;
                chain.get(i).reset().wrId(100 + i).opcode(WorkRequestOpcode.RDMA_READ).flags(i == 15 ? SendFlags.SIGNALED : 0)
                        .remote(p.remote.address() + off, p.remote.rkey())
                        .sge(0, p.local.region, off, 2048).sge(1, p.local.region, off + 2048, 2048).sgeCount(2);
            }
            p.local.qp.postSend(chain, 16);
            VerbsTestSupport.Completion c = VerbsTestSupport.awaitCompletions(p.local.cq, 1).getFirst();
            assertEquals(WorkCompletionStatus.SUCCESS, c.status(), c::toString);
            assertEquals(115, c.wrId());
            assertArrayEquals(theirs, p.local.region.segment().asSlice(0, PLAIN.dataBytes()).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void aReadChainThroughTheBuilder_bringsTheirBytes() throws Exception {
        try (RemotePeer p = RemotePeer.connect(PLAIN, PLAIN, false)) {
            byte[] theirs = p.fill(42, PLAIN.dataBytes());
            WorkRequestBuilder b = p.local.qp.workRequestBuilder();
            b.start();
            for (int i = 0; i < 8; i++) {
                long off = i * 8192L;
                b.wrId(200 + i).flags(i == 7 ? SendFlags.SIGNALED : 0).rdmaRead(p.remote.rkey(), p.remote.address() + off)
                        .sge(p.local.region.lkey(), p.local.region.address() + off, 8192);
            }
            b.complete();
            VerbsTestSupport.Completion c = VerbsTestSupport.awaitCompletions(p.local.cq, 1).getFirst();
            assertEquals(WorkCompletionStatus.SUCCESS, c.status(), c::toString);
            assertArrayEquals(theirs, p.local.region.segment().asSlice(0, PLAIN.dataBytes()).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void aWriteLandsInTheirMemory() throws Exception {
        try (RemotePeer p = RemotePeer.connect(PLAIN, PLAIN, false);
             SendWorkRequests w = SendWorkRequests.allocate(1, 1)) {
            byte[] ours = new byte[8192];
            new java.util.Random(43).nextBytes(ours);
            p.local.region.segment().asSlice(0, ours.length).copyFrom(java.lang.foreign.MemorySegment.ofArray(ours));
            w.get(0).reset().wrId(300).opcode(WorkRequestOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .remote(p.remote.address() + 4096, p.remote.rkey()).sge(0, p.local.region, 0, ours.length).sgeCount(1);
            p.local.qp.postSend(w, 1);
            assertEquals(WorkCompletionStatus.SUCCESS, VerbsTestSupport.awaitCompletions(p.local.cq, 1).getFirst().status());
            assertArrayEquals(ours, p.dump(4096, ours.length));
        }
    }

    @Test
    void sendsLandInTheirSharedReceiveQueue_inOrder_withTheirImmediates() throws Exception {
        PeerWire.Setup theirs = new PeerWire.Setup(4096, 4, 1024, true);
        try (RemotePeer p = RemotePeer.connect(theirs, PLAIN, false);
             SendWorkRequests s = SendWorkRequests.allocate(3, 1)) {
            int[] lengths = {100, 700, 0};
            for (int i = 0; i < 3; i++) {
                p.local.region.segment().asSlice(i * 1024L, 1024).fill((byte) (i + 1));
                s.get(i).reset().wrId(400 + i).opcode(WorkRequestOpcode.SEND_WITH_IMM).flags(SendFlags.SIGNALED)
                        .immediate(0x5150 + i).sge(0, p.local.region, i * 1024L, lengths[i]).sgeCount(lengths[i] == 0 ? 0 : 1);
            }
            p.local.qp.postSend(s, 3);
            VerbsTestSupport.awaitCompletions(p.local.cq, 3)
                    .forEach(c -> assertEquals(WorkCompletionStatus.SUCCESS, c.status(), c::toString));
            List<PeerWire.Seen> got = p.received(3);
            assertEquals(3, got.size(), got::toString);
            for (int i = 0; i < 3; i++) {
                PeerWire.Seen r = got.get(i);
                assertEquals(0, r.status(), r::toString);
                assertEquals(lengths[i], r.byteLength());
                assertEquals(0x5150 + i, r.immediate());
                byte[] expected = new byte[lengths[i]];
                Arrays.fill(expected, (byte) (i + 1));
                assertArrayEquals(expected, p.dump(theirs.receiveOffset((int) (r.wrId() - 1000)), lengths[i]));
            }
        }
    }

    @Test
    void theirSendLandsInOurSharedReceiveQueue() throws Exception {
        PeerWire.Setup ours = new PeerWire.Setup(4096, 2, 1024, true);
        try (RemotePeer p = RemotePeer.connect(PLAIN, ours, false)) {
            byte[] theirs = p.fill(44, PLAIN.dataBytes());
            assertEquals(0, p.send(10, 500, 0x7777), "their send's completion status");
            VerbsTestSupport.Completion c = VerbsTestSupport.awaitCompletions(p.local.cq, 1).getFirst();
            assertEquals(WorkCompletionStatus.SUCCESS, c.status(), c::toString);
            assertEquals(WorkCompletionOpcode.RECV, c.opcode());
            assertEquals(500, c.byteLength());
            assertEquals(0x7777, c.immediate());
            long slot = ours.receiveOffset((int) (c.wrId() - 1000));
            assertArrayEquals(Arrays.copyOfRange(theirs, 10, 510),
                    p.local.region.segment().asSlice(slot, 500).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void atomicsChangeTheirMemoryAndReturnTheOldValue() throws Exception {
        try (RemotePeer p = RemotePeer.connect(PLAIN, PLAIN, false);
             SendWorkRequests a = SendWorkRequests.allocate(2, 1)) {
            org.junit.jupiter.api.Assumptions.assumeTrue(p.local.context.queryDevice().supportsAtomics(), "no atomics here");
            byte[] theirs = p.fill(45, PLAIN.dataBytes());
            ByteBuffer le = ByteBuffer.wrap(theirs).order(ByteOrder.LITTLE_ENDIAN);
            long first = le.getLong(0);
            long second = le.getLong(8);
            a.get(0).reset().wrId(500).fetchAndAdd(p.remote.address(), p.remote.rkey(), 5).sge(0, p.local.region, 0, 8)
                    .sgeCount(1).flags(SendFlags.SIGNALED);
            a.get(1).reset().wrId(501).compareAndSwap(p.remote.address() + 8, p.remote.rkey(), second, 42L)
                    .sge(0, p.local.region, 8, 8).sgeCount(1).flags(SendFlags.SIGNALED);
            p.local.qp.postSend(a, 2);
            VerbsTestSupport.awaitCompletions(p.local.cq, 2)
                    .forEach(c -> assertEquals(WorkCompletionStatus.SUCCESS, c.status(), c::toString));
            assertEquals(first, p.local.region.segment().get(ValueLayout.JAVA_LONG_UNALIGNED, 0));
            assertEquals(second, p.local.region.segment().get(ValueLayout.JAVA_LONG_UNALIGNED, 8));
            ByteBuffer now = ByteBuffer.wrap(p.dump(0, 16)).order(ByteOrder.LITTLE_ENDIAN);
            assertEquals(first + 5, now.getLong(0));
            assertEquals(42L, now.getLong(8));
        }
    }

    @Test
    void aWrongRkeyAcrossTheWireIsARemoteAccessError_andFailsOurQueuePair() throws Exception {
        try (RemotePeer p = RemotePeer.connect(PLAIN, PLAIN, true);
             SendWorkRequests r = SendWorkRequests.allocate(1, 1)) {
            r.get(0).rdmaRead(600, SendFlags.SIGNALED, p.local.region, 0, 64, p.remote.address(), p.remote.rkey() ^ 0x5500);
            p.local.qp.postSend(r, 1);
            VerbsTestSupport.Completion c = VerbsTestSupport.awaitCompletions(p.local.cq, 1).getFirst();
            assertEquals(WorkCompletionStatus.REM_ACCESS_ERR, c.status(), c::toString);
            assertEquals(600, c.wrId());
            assertEquals(QueuePairState.ERR, p.local.qp.query().state());
        }
    }

    @Test
    void aReadPastTheEndOfTheirRegionIsRefused() throws Exception {
        try (RemotePeer p = RemotePeer.connect(PLAIN, PLAIN, true);
             SendWorkRequests r = SendWorkRequests.allocate(1, 1)) {
            r.get(0).rdmaRead(601, SendFlags.SIGNALED, p.local.region, 0, 4097,
                    p.remote.address() + p.remote.length() - 4096, p.remote.rkey());
            p.local.qp.postSend(r, 1);
            VerbsTestSupport.Completion c = VerbsTestSupport.awaitCompletions(p.local.cq, 1).getFirst();
            assertEquals(WorkCompletionStatus.REM_ACCESS_ERR, c.status(), c::toString);
            assertEquals(QueuePairState.ERR, p.local.qp.query().state());
        }
    }

    /**
     * A peer endpoint whose GID no host on the wire has (an address on our subnet nobody answers ARP
     * for): on RoCE, moving the QP to RTR resolves the GID's Ethernet address, and that fails with
     * ETIMEDOUT, naming the call, in bounded time -- nothing hangs and nothing is posted into a void.
     */
    @Test
    void connectingToAGidNobodyAnswersFailsAtReadyToReceive() throws Exception {
        java.net.InetAddress bind = RemotePeer.bindAddress();
        byte[] nobody = bind.getAddress();
        nobody[3] = (byte) 77;
        try (PeerSide side = new PeerSide(VerbsTestSupport.target().device(), bind, PLAIN, true, 0)) {
            org.rdmashuffle.verbs.QueuePairEndpoint endpoint = new org.rdmashuffle.verbs.QueuePairEndpoint(0x4242, 0,
                    org.rdmashuffle.verbs.Gid.ipv4Mapped((java.net.Inet4Address) java.net.InetAddress.getByAddress(nobody)), 0,
                    side.options.mtu());
            long start = System.nanoTime();
            org.rdmashuffle.verbs.VerbsException e = org.junit.jupiter.api.Assertions.assertThrows(
                    org.rdmashuffle.verbs.VerbsException.class, () -> side.qp.connect(endpoint, side.options));
            assertEquals(org.rdmashuffle.verbs.Errno.ETIMEDOUT, e.errno(), e.getMessage());
            org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("RTR"), e.getMessage());
            org.junit.jupiter.api.Assertions.assertTrue(System.nanoTime() - start < VerbsTestSupport.TIMEOUT.toNanos(),
                    "the failure took longer than the test timeout");
        }
    }
}
