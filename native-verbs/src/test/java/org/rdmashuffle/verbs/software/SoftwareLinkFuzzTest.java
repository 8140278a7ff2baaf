package org.rdmashuffle.verbs.software;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;

import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.ConnectOptions;
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
import org.rdmashuffle.verbs.WorkCompletions;
import org.rdmashuffle.verbs.WorkRequestOpcode;

/**
 * The software provider's link as a hostile peer device meets it, end to end over loopback: per input a
 * TCP connection to the device's listener, the link hello (mostly the right magic), then frames the input
 * builds -- ATTACHes with the right token or not (for a QP waiting for its peer, and for the QPs of a pair
 * already connected), requests and responses naming that QP with keys and addresses inside and outside
 * its regions, frames spoofing the connected pair, DETACHes, headers of any bytes -- and the end of the
 * stream. One device per JVM, with a connected QP pair of its own as the health check.
 *
 * <p>Contract: whatever the peer sends, the device closes that link (at the latest at its end of stream),
 * nothing stays behind (links, joined QPs, the QP table), memory no key of the peer's QP reaches is never
 * written (a LOCAL_WRITE-only region, a region of another PD), the connected pair stays in RTS and a
 * SEND/RECV on it completes successfully, and the provider's listener and link loop threads are alive.
 * docs/fuzzing.md
 */
class SoftwareLinkFuzzTest {
    private static final ConnectOptions OPTIONS = ConnectOptions.defaults(1, 0, Mtu.MTU_4096);
    /** The QP number the fuzzing peer claims for itself. */
    private static final int PEER_QPN = 0xABCD;
    private static final int TARGET_BYTES = 64 << 10;
    private static final int CANARY_BYTES = 4 << 10;
    /** Bytes one input may write to the link, payloads included (payloads are padded with zeros). */
    private static final int MAX_WRITE = 256 << 10;
    /** The health check's nominal bound is a second; it fails only past this (a loaded CI machine is slow, not broken). */
    private static final long HEALTH_NANOS = TimeUnit.SECONDS.toNanos(5);
    private static final long LINK_NANOS = TimeUnit.SECONDS.toNanos(5);

    private static final SoftwareProvider PROVIDER;
    private static final SoftContext CONTEXT;
    private static final ProtectionDomain PD;
    private static final CompletionQueue CQ_A;
    private static final CompletionQueue CQ_B;
    private static final CompletionQueue CQ_T;
    private static final QueuePair A;
    private static final QueuePair B;
    /** Memory a peer's QP may read, write and update, as far as the QP's access flags allow. */
    private static final MemoryRegion TARGET;
    /** Registered without remote access: no peer may touch it. */
    private static final MemoryRegion CANARY;
    /** Registered for remote access in another PD: no QP of {@link #PD} reaches it. */
    private static final MemoryRegion FOREIGN;
    /** The fuzzed QP's own buffers (its receives and its reads' destinations). */
    private static final MemoryRegion LOCAL;
    private static final MemoryRegion SRC;
    private static final MemoryRegion DST;
    private static final InetSocketAddress LISTENER;
    private static final List<Thread> PROVIDER_THREADS;
    private static final int LINKS;
    private static final int JOINED;
    private static final int QUEUE_PAIRS;
    private static final ReceiveWorkRequests RECV = ReceiveWorkRequests.allocate(2, 1);
    private static final SendWorkRequests SEND = SendWorkRequests.allocate(2, 1);
    private static final WorkCompletions WC = WorkCompletions.allocate(16);
    private static final ByteBuffer DRAIN = ByteBuffer.allocateDirect(64 << 10);
    private static long checks;

    static {
        // The provider dials its own listener (the pair) and the test dials it (the peer): loopback only.
        @SuppressWarnings({"resource", "unused"})
        var loopbackOnly = BugDetectors.allowNetworkConnections((host, port) -> host.startsWith("127.") || host.equals("localhost"));
        PROVIDER = new SoftwareProvider(SoftwareProvider.Config.loopback());
        CONTEXT = (SoftContext) PROVIDER.devices().getFirst().open();
        PD = CONTEXT.allocateProtectionDomain();
        CQ_A = CONTEXT.createCompletionQueue(64, null, 0);
        CQ_B = CONTEXT.createCompletionQueue(64, null, 0);
        CQ_T = CONTEXT.createCompletionQueue(256, null, 0);
        A = PD.createQueuePair(QueuePairConfig.of(CQ_A, 16, 16, 1));
        B = PD.createQueuePair(QueuePairConfig.of(CQ_B, 16, 16, 1));
        A.connect(B.localEndpoint(OPTIONS), OPTIONS);
        B.connect(A.localEndpoint(OPTIONS), OPTIONS);
        int remote = Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE | Access.REMOTE_ATOMIC;
        TARGET = PD.allocateAndRegister(TARGET_BYTES, remote);
        CANARY = PD.allocateAndRegister(CANARY_BYTES, Access.LOCAL_WRITE);
        FOREIGN = CONTEXT.allocateProtectionDomain().allocateAndRegister(CANARY_BYTES, remote);
        LOCAL = PD.allocateAndRegister(TARGET_BYTES, Access.LOCAL_WRITE);
        SRC = PD.allocateAndRegister(4096, Access.LOCAL_WRITE);
        DST = PD.allocateAndRegister(4096, Access.LOCAL_WRITE);
        fill(CANARY);
        fill(FOREIGN);
        LISTENER = new InetSocketAddress(InetAddress.getLoopbackAddress(), A.localEndpoint(OPTIONS).lid());
        PROVIDER_THREADS = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith("rdma-soft-link-loop-") || t.getName().startsWith("rdma-soft-listener-"))
                .toList();
        LINKS = PROVIDER.openLinks();
        JOINED = PROVIDER.openConnections();
        QUEUE_PAIRS = CONTEXT.device.queuePairs.size();
    }

    @FuzzTest
    void link(FuzzedDataProvider data) throws IOException {
        QueuePair t = targetQueuePair(data);
        try {
            talk(data, t);
        } finally {
            t.close();
            while (CQ_T.poll(WC) > 0) {
                // the fuzzed QP's completions, whatever they are
            }
        }
        checkHealth();
    }

    /**
     * A passive QP of the device waiting for its peer (the fuzzing one) to join: in INIT, or in RTS with
     * receives posted and a READ and a SEND queued for when the peer joins (sequences 0 and 1).
     */
    private static QueuePair targetQueuePair(FuzzedDataProvider data) {
        QueuePair t = PD.createQueuePair(QueuePairConfig.of(CQ_T, 16, 16, 2).asPassive());
        t.modifyToInit(OPTIONS.withRemoteAccess(data.consumeInt(0, 7) << 1)); // REMOTE_WRITE, _READ, _ATOMIC
        if (data.consumeBoolean()) {
            Gid gid = Gid.ipv4Mapped((java.net.Inet4Address) LISTENER.getAddress());
            t.modifyToReadyToReceive(new QueuePairEndpoint(PEER_QPN, 0, gid, 1, Mtu.MTU_4096, "peer"), OPTIONS);
            t.modifyToReadyToSend(OPTIONS);
            RECV.set(0, 10, LOCAL, 0, 4096).set(1, 11, LOCAL, 4096, 60_000);
            t.postReceive(RECV, 2);
            SEND.get(0).rdmaRead(20, SendFlags.SIGNALED, LOCAL, 0, 64, 0x10000, 7);
            SEND.get(1).reset().wrId(21).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED).sge(0, LOCAL, 100, 32)
                    .sgeCount(1);
            t.postSend(SEND, 2);
        }
        return t;
    }

    /** Dials the listener, says hello, writes the input's frames, ends the stream and waits for the device to close the link. */
    private static void talk(FuzzedDataProvider data, QueuePair t) throws IOException {
        ByteBuffer out = ByteBuffer.allocate(MAX_WRITE);
        out.putInt(data.consumeInt(0, 9) != 0 ? Frame.HELLO_MAGIC : data.consumeInt());
        for (int i = 0; i < 32 && data.remainingBytes() > 0 && out.remaining() > Frame.HEADER; i++) {
            frame(data, t, out);
        }
        out.flip();
        try (SocketChannel ch = SocketChannel.open(LISTENER); Selector selector = Selector.open()) {
            ch.configureBlocking(false);
            SelectionKey key = ch.register(selector, SelectionKey.OP_READ | SelectionKey.OP_WRITE);
            long deadline = System.nanoTime() + LINK_NANOS;
            boolean writing = true;
            while (true) {
                if (System.nanoTime() > deadline) {
                    fail(writing ? "the link stopped reading from its peer (" + out.remaining() + " bytes not taken in "
                            + TimeUnit.NANOSECONDS.toSeconds(LINK_NANOS) + " s)"
                            : "the link was not closed within " + TimeUnit.NANOSECONDS.toSeconds(LINK_NANOS) + " s of its peer's end of stream");
                }
                selector.select(100);
                selector.selectedKeys().clear();
                if (writing) {
                    try {
                        ch.write(out);
                    } catch (IOException closedByTheDevice) {
                        out.position(out.limit());
                    }
                    if (!out.hasRemaining()) {
                        writing = false;
                        try {
                            ch.shutdownOutput();
                        } catch (IOException closedByTheDevice) {
                            // then the read below sees the end as well
                        }
                        key.interestOps(SelectionKey.OP_READ);
                    }
                }
                int n;
                try {
                    DRAIN.clear();
                    n = ch.read(DRAIN);
                } catch (IOException reset) {
                    n = -1;
                }
                if (n < 0) {
                    return; // closed by the device: the link is gone (it leaves the device's table before its socket closes)
                }
            }
        }
    }

    /** Appends one frame the input chooses (header, then as much of its payload as fits). */
    private static void frame(FuzzedDataProvider data, QueuePair t, ByteBuffer out) {
        Frame f = Frame.request((byte) 0, 0);
        byte[] payload = null;
        switch (data.consumeInt(0, 9)) {
            case 0, 1 -> { // ATTACH: to the waiting QP, or to one of the connected pair (each with its token, or bytes)
                QueuePair to = data.consumeInt(0, 3) == 0 ? (data.consumeBoolean() ? A : B) : t;
                f.type = Frame.ATTACH;
                f.dstQpn = to.qpNumber();
                f.srcQpn = data.consumeInt(0, 3) != 0 ? (to == t ? PEER_QPN : (to == A ? B : A).qpNumber()) : data.consumeInt();
                payload = data.consumeBoolean() ? ((SoftQueuePair) to).issuedToken().getBytes(StandardCharsets.US_ASCII)
                        : data.consumeBytes(data.consumeInt(0, Frame.MAX_TOKEN + 8));
                f.length = data.consumeInt(0, 7) != 0 ? payload.length : data.consumeInt(0, Frame.MAX_TOKEN + 65) - 1;
            }
            case 2, 3 -> { // a request to the waiting QP
                f.type = new byte[] {Frame.READ, Frame.WRITE, Frame.SEND, Frame.COMPARE_SWAP, Frame.FETCH_ADD,
                        Frame.NOP}[data.consumeInt(0, 5)];
                addressed(data, f, t.qpNumber(), PEER_QPN);
                if (f.type == Frame.WRITE || f.type == Frame.SEND) {
                    payload = data.consumeBytes(data.consumeInt(0, 512));
                }
            }
            case 4 -> { // a response to one of the waiting QP's requests (sequence 0: its READ, 1: its SEND)
                f.type = new byte[] {Frame.READ_RESPONSE, Frame.ACK, Frame.ATOMIC_RESPONSE, Frame.RNR_NAK}[data.consumeInt(0, 3)];
                addressed(data, f, t.qpNumber(), PEER_QPN);
                f.status = data.consumeInt(0, 3) == 0 ? data.consumeInt() : data.consumeInt(0, 2);
                if (f.type == Frame.READ_RESPONSE) {
                    payload = data.consumeBytes(data.consumeInt(0, 128));
                }
            }
            case 5 -> { // DETACH or ATTACH_ACK, to the waiting QP or the connected pair
                f.type = data.consumeBoolean() ? Frame.DETACH : Frame.ATTACH_ACK;
                QueuePair to = new QueuePair[] {t, A, B}[data.consumeInt(0, 2)];
                f.dstQpn = to.qpNumber();
                f.srcQpn = data.consumeBoolean() ? (to == t ? PEER_QPN : (to == A ? B : A).qpNumber()) : data.consumeInt();
                f.status = data.consumeInt(0, 1);
            }
            case 6 -> { // any frame as if from the connected pair's peer QP: not joined on this link
                f.type = data.consumeByte();
                boolean toA = data.consumeBoolean();
                addressed(data, f, (toA ? A : B).qpNumber(), (toA ? B : A).qpNumber());
                payload = data.consumeBytes(data.consumeInt(0, 256));
            }
            case 7 -> { // a header of any bytes (any type, a negative length, ...)
                byte[] h = java.util.Arrays.copyOf(data.consumeBytes(Frame.HEADER), Frame.HEADER);
                out.put(h, 0, Math.min(h.length, out.remaining()));
                return;
            }
            case 8 -> { // raw bytes
                byte[] raw = data.consumeBytes(data.consumeInt(0, 256));
                out.put(raw, 0, Math.min(raw.length, out.remaining()));
                return;
            }
            default -> { // a frame for a QP this device does not have
                f.type = data.consumeByte();
                addressed(data, f, data.consumeInt(), data.consumeInt());
            }
        }
        if (out.remaining() < Frame.HEADER) {
            return;
        }
        f.encode(out.slice(out.position(), Frame.HEADER));
        out.position(out.position() + Frame.HEADER);
        // The payload the header announces: the input's bytes, padded with zeros (a long one costs no input),
        // as far as the write bound allows; a frame cut short ends the stream in its middle.
        long announced = Math.min(f.payloadLength(), out.remaining());
        if (payload != null) {
            int n = (int) Math.min(payload.length, announced);
            out.put(payload, 0, n);
            announced -= n;
        }
        out.position(out.position() + (int) announced);
    }

    /** Fills in the QPs, sequence, flags, key, address, length and operands of a request or response. */
    private static void addressed(FuzzedDataProvider data, Frame f, int dstQpn, int srcQpn) {
        f.dstQpn = dstQpn;
        f.srcQpn = data.consumeInt(0, 7) != 0 ? srcQpn : data.consumeInt();
        f.sequence = data.consumeInt(0, 3) != 0 ? data.consumeLong(0, 4) : data.consumeLong();
        f.flags = data.consumeInt(0, 3);
        MemoryRegion region = new MemoryRegion[] {TARGET, TARGET, TARGET, CANARY, FOREIGN, LOCAL}[data.consumeInt(0, 5)];
        f.rkey = data.consumeInt(0, 7) != 0 ? region.rkey() : data.consumeInt();
        f.address = data.consumeInt(0, 7) != 0 ? region.address() - 16 + data.consumeLong(0, region.length() + 32)
                : data.consumeLong();
        f.length = switch (data.consumeInt(0, 7)) {
            case 0 -> data.consumeInt(); // any, a negative one among them
            case 1 -> data.consumeInt(0, 1 << 20);
            default -> data.consumeInt(0, 256);
        };
        f.a = data.consumeLong();
        f.b = data.consumeLong();
    }

    /** The device after the link closed: nothing left behind, untouchable memory untouched, the pair and the threads well. */
    private static void checkHealth() {
        assertEquals(LINKS, PROVIDER.openLinks(), "links open after the peer's link closed");
        assertEquals(JOINED, PROVIDER.openConnections(), "QPs joined to a link after the peer's link closed");
        assertEquals(QUEUE_PAIRS, CONTEXT.device.queuePairs.size(), "QPs in the device's table after the fuzzed one closed");
        assertUnchanged(CANARY, "a region registered without remote access");
        assertUnchanged(FOREIGN, "a region of another protection domain");
        for (Thread thread : PROVIDER_THREADS) {
            assertTrue(thread.isAlive(), thread.getName() + " died");
        }
        assertEquals(QueuePairState.RTS, A.query().state(), "the connected pair's QP " + A.qpNumber());
        assertEquals(QueuePairState.RTS, B.query().state(), "the connected pair's QP " + B.qpNumber());

        long n = ++checks;
        SRC.segment().set(ValueLayout.JAVA_LONG, 0, n);
        RECV.set(0, n, DST, 0, 64);
        B.postReceive(RECV, 1);
        SEND.get(0).reset().wrId(n).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED).sge(0, SRC, 0, 64).sgeCount(1);
        A.postSend(SEND, 1);
        awaitSuccess(CQ_A, n, "the pair's SEND");
        awaitSuccess(CQ_B, n, "the pair's RECV");
        assertEquals(n, DST.segment().get(ValueLayout.JAVA_LONG, 0), "what the pair's RECV received");
    }

    private static void awaitSuccess(CompletionQueue cq, long wrId, String what) {
        long start = System.nanoTime();
        while (cq.poll(WC) == 0) {
            if (System.nanoTime() - start > HEALTH_NANOS) {
                fail(what + " did not complete within " + TimeUnit.NANOSECONDS.toSeconds(HEALTH_NANOS) + " s");
            }
            LockSupport.parkNanos(20_000);
        }
        assertTrue(WC.isSuccess(0), what + " completed with " + WC.status(0));
        assertEquals(wrId, WC.wrId(0), what);
    }

    private static void fill(MemoryRegion r) {
        MemorySegment s = r.segment();
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
        }
    }

    private static void assertUnchanged(MemoryRegion r, String what) {
        MemorySegment s = r.segment();
        for (long i = 0; i < s.byteSize(); i++) {
            if (s.get(ValueLayout.JAVA_BYTE, i) != (byte) (i * 31 + 7)) {
                fail(what + " was written at offset " + i);
            }
        }
    }
}
