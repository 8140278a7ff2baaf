package org.rdmashuffle.verbs.software;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.Gid;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.QueuePairEndpoint;
import org.rdmashuffle.verbs.QueuePairState;
import org.rdmashuffle.verbs.ReceiveWorkRequests;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsException;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkRequestOpcode;
import org.rdmashuffle.verbs.conformance.VerbsTestSupport;
import org.rdmashuffle.verbs.conformance.VerbsTestSupport.Completion;

/**
 * One TCP connection per pair of software devices, carrying all of their QPs: what one QP does on
 * it (fails, waits for a receive, is attacked) leaves the others on it working.
 */
class SoftwareLinkTest {
    private static final ConnectOptions OPTIONS = SoftwarePair.OPTIONS;

    /** Two devices (two providers, as two hosts), each with a PD, a CQ and a 64 KiB region peers may read and write. */
    private static final class TwoDevices implements AutoCloseable {
        final SoftwareProvider hostA = new SoftwareProvider(SoftwareProvider.Config.loopback());
        final SoftwareProvider hostB = new SoftwareProvider(SoftwareProvider.Config.loopback());
        final VerbsContext contextA = hostA.devices().getFirst().open();
        final VerbsContext contextB = hostB.devices().getFirst().open();
        final ProtectionDomain pdA = contextA.allocateProtectionDomain();
        final ProtectionDomain pdB = contextB.allocateProtectionDomain();
        final CompletionQueue cqA = contextA.createCompletionQueue(1024, null, 0);
        final CompletionQueue cqB = contextB.createCompletionQueue(1024, null, 0);
        final MemoryRegion memoryA = pdA.allocateAndRegister(64 << 10, Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE);
        final MemoryRegion memoryB = pdB.allocateAndRegister(64 << 10, Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE);
        final List<QueuePair[]> pairs = new ArrayList<>();

        /** Connects a QP on A to a QP on B; returns {A's, B's}. */
        QueuePair[] connect(ConnectOptions options) {
            QueuePair a = pdA.createQueuePair(QueuePairConfig.of(cqA, 64, 64, 4));
            QueuePair b = pdB.createQueuePair(QueuePairConfig.of(cqB, 64, 64, 4));
            QueuePairEndpoint ea = a.localEndpoint(options);
            QueuePairEndpoint eb = b.localEndpoint(options);
            a.connect(eb, options);
            b.connect(ea, options);
            QueuePair[] pair = {a, b};
            pairs.add(pair);
            return pair;
        }

        SoftDevice deviceA() {
            return ((SoftContext) contextA).device;
        }

        SoftDevice deviceB() {
            return ((SoftContext) contextB).device;
        }

        @Override
        public void close() {
            for (QueuePair[] p : pairs) {
                p[0].close();
                p[1].close();
            }
            memoryA.close();
            memoryB.close();
            hostA.close();
            hostB.close();
        }
    }

    @Test
    void manyQueuePairsBetweenTwoDevices_shareOneConnection_andEachReadsItsOwnBytes() {
        try (TwoDevices d = new TwoDevices(); SendWorkRequests chain = SendWorkRequests.allocate(1, 1)) {
            for (int i = 0; i < 8; i++) {
                d.connect(OPTIONS);
                d.memoryB.segment().set(ValueLayout.JAVA_BYTE, 1024L * i, (byte) (i + 1));
            }
            assertEquals(1, d.deviceA().openLinks(), "one connection from A");
            assertEquals(1, d.deviceB().openLinks(), "and the same one at B");
            assertEquals(8, d.deviceA().openConnections(), "eight QPs joined over it");
            for (int i = 0; i < 8; i++) {
                chain.get(0).rdmaRead(100 + i, SendFlags.SIGNALED, d.memoryA, 1024L * i, 1024, d.memoryB.address() + 1024L * i,
                        d.memoryB.rkey());
                d.pairs.get(i)[0].postSend(chain, 1);
            }
            List<Completion> done = VerbsTestSupport.awaitCompletions(d.cqA, 8);
            done.forEach(c -> assertEquals(WorkCompletionStatus.SUCCESS, c.status(), c.toString()));
            for (int i = 0; i < 8; i++) {
                assertEquals((byte) (i + 1), d.memoryA.segment().get(ValueLayout.JAVA_BYTE, 1024L * i));
            }
        }
    }

    @Test
    void aQueuePairThatFails_takesItsPeerToError_andLeavesTheOthersOnTheLinkWorking() {
        try (TwoDevices d = new TwoDevices(); SendWorkRequests chain = SendWorkRequests.allocate(1, 1)) {
            QueuePair[] failing = d.connect(OPTIONS);
            QueuePair[] other = d.connect(OPTIONS);
            chain.get(0).rdmaRead(1, SendFlags.SIGNALED, d.memoryA, 0, 64, d.memoryB.address(), d.memoryB.rkey() ^ 0x5555);
            failing[0].postSend(chain, 1);
            Completion c = VerbsTestSupport.awaitCompletions(d.cqA, 1).getFirst();
            assertEquals(WorkCompletionStatus.REM_ACCESS_ERR, c.status(), "a wrong rkey: " + c);
            assertEquals(QueuePairState.ERR, failing[0].query().state());
            awaitUpTo10s(() -> failing[1].query().state() == QueuePairState.ERR);
            assertEquals(QueuePairState.ERR, failing[1].query().state(), "its peer is told and fails too");

            d.memoryB.segment().set(ValueLayout.JAVA_BYTE, 4096, (byte) 42);
            chain.get(0).rdmaRead(2, SendFlags.SIGNALED, d.memoryA, 4096, 64, d.memoryB.address() + 4096, d.memoryB.rkey());
            other[0].postSend(chain, 1);
            assertEquals(WorkCompletionStatus.SUCCESS, VerbsTestSupport.awaitCompletions(d.cqA, 1).getFirst().status());
            assertEquals((byte) 42, d.memoryA.segment().get(ValueLayout.JAVA_BYTE, 4096));
            assertEquals(1, d.deviceA().openLinks(), "the link stays up");
            assertEquals(QueuePairState.RTS, other[1].query().state());
        }
    }

    @Test
    void aSendWaitingForAReceive_holdsUpNoOtherQueuePairOnTheLink_andLandsOnceOneIsPosted() throws Exception {
        try (TwoDevices d = new TwoDevices(); SendWorkRequests chain = SendWorkRequests.allocate(1, 1);
             ReceiveWorkRequests receive = ReceiveWorkRequests.allocate(1, 1)) {
            QueuePair[] waiting = d.connect(OPTIONS); // rnr_retry 7: retried for as long as the QP lives
            QueuePair[] other = d.connect(OPTIONS);
            d.memoryA.segment().set(ValueLayout.JAVA_BYTE, 0, (byte) 7);
            chain.get(0).reset().wrId(10).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED).sge(0, d.memoryA, 0, 256).sgeCount(1);
            waiting[0].postSend(chain, 1);
            Thread.sleep(100); // a few RNR rounds

            chain.get(0).rdmaRead(11, SendFlags.SIGNALED, d.memoryA, 8192, 64, d.memoryB.address(), d.memoryB.rkey());
            other[0].postSend(chain, 1);
            Completion read = VerbsTestSupport.awaitCompletions(d.cqA, 1).getFirst();
            assertEquals(11, read.wrId(), "the read on the other QP completes while the send waits");
            assertEquals(WorkCompletionStatus.SUCCESS, read.status());

            receive.set(0, 20, d.memoryB, 16384, 4096);
            waiting[1].postReceive(receive, 1);
            Completion sent = VerbsTestSupport.awaitCompletions(d.cqA, 1).getFirst();
            assertEquals(10, sent.wrId());
            assertEquals(WorkCompletionStatus.SUCCESS, sent.status());
            Completion received = VerbsTestSupport.awaitCompletions(d.cqB, 1).getFirst();
            assertEquals(20, received.wrId());
            assertEquals(256, received.byteLength());
            assertEquals((byte) 7, d.memoryB.segment().get(ValueLayout.JAVA_BYTE, 16384));
        }
    }

    @Test
    void rnrRetriesRunOut_asTheQueuePairWasToldTo() {
        try (TwoDevices d = new TwoDevices(); SendWorkRequests chain = SendWorkRequests.allocate(2, 1)) {
            QueuePair[] pair = d.connect(OPTIONS.withRnrRetry(2));
            for (int i = 0; i < 2; i++) {
                chain.get(i).reset().wrId(30 + i).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED)
                        .sge(0, d.memoryA, 0, 64).sgeCount(1);
            }
            pair[0].postSend(chain, 2);
            List<Completion> done = VerbsTestSupport.awaitCompletions(d.cqA, 2);
            assertEquals(WorkCompletionStatus.RNR_RETRY_EXC_ERR, done.get(0).status(), done.toString());
            assertEquals(WorkCompletionStatus.WR_FLUSH_ERR, done.get(1).status(), done.toString());
            assertEquals(QueuePairState.ERR, pair[0].query().state());
        }
    }

    @Test
    void aPeerJoinedToOneQueuePair_cannotWriteToAnotherOverTheSameLink() throws Exception {
        try (TwoDevices d = new TwoDevices()) {
            QueuePair[] victim = d.connect(OPTIONS); // B's QP victim[1] is joined to A's victim[0]
            QueuePair own = d.pdB.createQueuePair(QueuePairConfig.of(d.cqB, 64, 64, 4));
            QueuePairEndpoint ownEndpoint = own.localEndpoint(OPTIONS);
            own.modifyToInit(OPTIONS);
            int attackerQpn = 31337;
            try (RawLinkPeer attacker = new RawLinkPeer(ownEndpoint.lid())) {
                assertEquals(0, attacker.helloVerdict());
                assertEquals(0, attacker.attach(attackerQpn, ownEndpoint.qpNumber(), ownEndpoint.admissionToken()),
                        "the attacker holds a token of its own QP");
                for (int qpn : new int[] {victim[1].qpNumber(), ownEndpoint.qpNumber()}) {
                    for (int src : new int[] {victim[0].qpNumber(), attackerQpn}) {
                        if (qpn == ownEndpoint.qpNumber() && src == attackerQpn) {
                            continue; // its own QP and itself: allowed, not tried here
                        }
                        Frame write = Frame.request(Frame.WRITE, 0);
                        write.srcQpn = src;
                        write.dstQpn = qpn;
                        write.address = d.memoryB.address();
                        write.rkey = d.memoryB.rkey();
                        write.length = 8;
                        attacker.write(write);
                        attacker.out.write(new byte[] {1, 2, 3, 4, 5, 6, 7, 8});
                        attacker.out.flush();
                    }
                }
                // The link still works for the attacker's own QP: a NOP to it is answered (or refused for now).
                Frame nop = Frame.request(Frame.NOP, 0);
                nop.srcQpn = attackerQpn;
                nop.dstQpn = ownEndpoint.qpNumber();
                attacker.write(nop);
                Frame answer = attacker.readHeader();
                assertEquals(ownEndpoint.qpNumber(), answer.srcQpn, "the only answer is from the attacker's own QP");
            }
            assertEquals(0L, d.memoryB.segment().get(ValueLayout.JAVA_LONG, 0), "no frame reached another QP");
            assertEquals(QueuePairState.RTS, victim[1].query().state(), "the victim QP is untouched");
            own.close();
        }
    }

    @Test
    @org.junit.jupiter.api.Timeout(value = 180, threadMode = org.junit.jupiter.api.Timeout.ThreadMode.SEPARATE_THREAD)
    void aPeerThatAsksWithoutReadingTheAnswers_isCutOff_andTheOtherLinksWork() throws Exception {
        try (TwoDevices d = new TwoDevices()) {
            QueuePair[] honest = d.connect(OPTIONS); // A's and B's QP over their own link
            QueuePair own = d.pdB.createQueuePair(QueuePairConfig.of(d.cqB, 64, 64, 4));
            QueuePairEndpoint ownEndpoint = own.localEndpoint(OPTIONS);
            own.modifyToInit(OPTIONS);
            int attackerQpn = 4242;
            int linksBefore = d.deviceB().openLinks();
            try (RawLinkPeer attacker = new RawLinkPeer(ownEndpoint.lid())) {
                assertEquals(0, attacker.helloVerdict());
                assertEquals(0, attacker.attach(attackerQpn, ownEndpoint.qpNumber(), ownEndpoint.admissionToken()));
                assertEquals(linksBefore + 1, d.deviceB().openLinks());
                // The same request again and again, never reading: each is answered (an RNR NAK: the QP is
                // not ready), and once the sockets' buffers are full the answers pile up on B's side.
                Frame nop = Frame.request(Frame.NOP, 0);
                nop.srcQpn = attackerQpn;
                nop.dstQpn = ownEndpoint.qpNumber();
                byte[] one = nop.encode().array();
                byte[] burst = new byte[one.length * 1024];
                for (int i = 0; i < 1024; i++) {
                    System.arraycopy(one, 0, burst, i * one.length, one.length);
                }
                // Flooded from a thread of its own: whether its writes fail or stall once B hangs up is TCP's
                // business; what is asserted is B's side.
                Thread flood = Thread.ofPlatform().daemon().start(() -> {
                    try {
                        for (int i = 0; i < 2000; i++) { // up to 2 M requests (112 MB)
                            attacker.out.write(burst);
                        }
                    } catch (IOException e) {
                        // B closed the link
                    }
                });
                awaitUpTo(() -> d.deviceB().openLinks() == linksBefore, 60_000); // generous: the Soft-RoCE guest emulates its CPU
                assertEquals(linksBefore, d.deviceB().openLinks(), "B kept the link of a peer that never read its answers");
                attacker.socket.close();
                flood.join(10_000);
            }
            assertEquals(linksBefore, d.deviceB().openLinks(), "the attacker's link is closed, the others are not");
            // The honest pair still works over its link.
            try (SendWorkRequests chain = SendWorkRequests.allocate(1, 1)) {
                chain.get(0).rdmaRead(1, SendFlags.SIGNALED, d.memoryA, 0, 8, d.memoryB.address(), d.memoryB.rkey());
                honest[0].postSend(chain, 1);
                Completion c = VerbsTestSupport.awaitCompletions(d.cqA, 1).getFirst();
                assertEquals(WorkCompletionStatus.SUCCESS, c.status(), c.toString());
            }
            own.close();
        }
    }

    @Test
    void aJoinThePeerNeverAnswers_failsWithEtimedout_andTellsThePeerToLeave() throws Exception {
        // Our device at 127.0.0.2 and a silent peer at 127.0.0.1: the larger address dials, so ours does.
        try (ServerSocket silent = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"));
             SoftwareProvider host = new SoftwareProvider(new SoftwareProvider.Config(InetAddress.getByName("127.0.0.2"), 0,
                     SoftwareProvider.Admission.ISSUED_TOKEN));
             VerbsContext context = host.devices().getFirst().open();
             ProtectionDomain pd = context.allocateProtectionDomain();
             CompletionQueue cq = context.createCompletionQueue(16, null, 0);
             QueuePair qp = pd.createQueuePair(QueuePairConfig.of(cq, 4, 4, 1))) {
            int peerQpn = 777;
            CompletableFuture<Frame> afterAttach = new CompletableFuture<>();
            Thread peer = Thread.ofPlatform().daemon().start(() -> {
                try (Socket s = silent.accept()) {
                    s.setSoTimeout(30_000);
                    DataInputStream in = new DataInputStream(s.getInputStream());
                    assertEquals(Frame.HELLO_MAGIC, in.readInt());
                    new DataOutputStream(s.getOutputStream()).writeInt(0);
                    Frame attach = header(in);
                    assertEquals(Frame.ATTACH, attach.type);
                    in.readNBytes(attach.length); // the token; never answered
                    afterAttach.complete(header(in));
                } catch (Throwable e) {
                    afterAttach.completeExceptionally(e);
                }
            });
            QueuePairEndpoint silentEndpoint = new QueuePairEndpoint(peerQpn, 0,
                    Gid.ipv4Mapped((Inet4Address) silent.getInetAddress()), silent.getLocalPort(),
                    Mtu.MTU_4096, "t");
            VerbsException e = assertThrows(
                    VerbsException.class, () -> qp.connect(silentEndpoint, OPTIONS));
            assertEquals(Errno.ETIMEDOUT, e.errno(), e.getMessage());
            Frame next = afterAttach.get(30, TimeUnit.SECONDS);
            assertEquals(Frame.DETACH, next.type, "what followed the unanswered ATTACH");
            assertEquals(qp.qpNumber(), next.srcQpn);
            assertEquals(peerQpn, next.dstQpn);
            peer.join(5_000);
        }
    }

    private static Frame header(DataInputStream in) throws IOException {
        ByteBuffer h = ByteBuffer.wrap(in.readNBytes(Frame.HEADER));
        if (h.remaining() < Frame.HEADER) {
            throw new java.io.EOFException("the link closed with no further frame");
        }
        Frame f = Frame.request(h.get(0), h.getLong(8));
        f.length = h.getInt(28);
        f.dstQpn = h.getInt(48);
        f.srcQpn = h.getInt(52);
        return f;
    }

    @Test
    void aLinkWhoseQueuePairsAllLeft_isClosedAfterItsIdleTime() {
        try (TwoDevices d = new TwoDevices()) {
            QueuePair[] pair = d.connect(OPTIONS);
            assertEquals(1, d.deviceA().openLinks());
            pair[0].close();
            pair[1].close();
            awaitUpTo(() -> d.deviceA().openLinks() == 0 && d.deviceB().openLinks() == 0,
                    SoftDevice.LINK_IDLE_SECONDS * 1000 + 5000);
            assertEquals(0, d.deviceA().openLinks());
            assertEquals(0, d.deviceB().openLinks());
            // The next QP pair dials a new one.
            d.connect(OPTIONS);
            assertEquals(1, d.deviceA().openLinks());
        }
    }

    private static void awaitUpTo10s(BooleanSupplier condition) {
        awaitUpTo(condition, 10_000);
    }

    private static void awaitUpTo(BooleanSupplier condition, long millis) {
        long deadline = System.nanoTime() + millis * 1_000_000L;
        while (!condition.getAsBoolean() && System.nanoTime() < deadline) {
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
