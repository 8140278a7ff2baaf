package org.rdmashuffle.verbs.crosshost;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.VerbsDevice;
import org.rdmashuffle.verbs.WorkCompletionOpcode;
import org.rdmashuffle.verbs.WorkCompletions;
import org.rdmashuffle.verbs.WorkRequestOpcode;
import org.rdmashuffle.verbs.conformance.VerbsTestSupport;

/**
 * The far end of {@link CrossHostVerbsTest}, run on the other host of a Soft-RoCE pair: for each
 * test's TCP connection it makes a {@link PeerSide} on this host's device, swaps queue-pair endpoints,
 * connects, and then does what the test asks -- fill or show its memory, report the receives it
 * completed, send a message -- until the test ends the connection. One test at a time.
 *
 * <p>Arguments: bind address (this host's, on the wire), port, and a file whose appearance stops it.
 */
public final class RemotePeerAgent {
    public static void main(String[] args) throws Exception {
        InetAddress bind = InetAddress.getByName(args[0]);
        int port = Integer.parseInt(args[1]);
        Path stop = Path.of(args[2]);
        VerbsDevice device = VerbsTestSupport.target().device();
        try (ServerSocket server = new ServerSocket()) {
            server.bind(new InetSocketAddress(bind, port));
            server.setSoTimeout(500);
            System.out.println("READY " + server.getLocalPort());
            System.out.flush();
            while (!Files.exists(stop)) {
                Socket s;
                try {
                    s = server.accept();
                } catch (java.net.SocketTimeoutException idle) {
                    continue;
                }
                try (s) {
                    serve(s, device, bind);
                } catch (IOException | RuntimeException e) {
                    System.out.println("agent: a test's connection ended with " + e);
                }
            }
        }
    }

    private static void serve(Socket s, VerbsDevice device, InetAddress bind) throws IOException {
        s.setSoTimeout(300_000); // a test that stops talking does not hold the agent for ever
        DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream()));
        DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
        PeerWire.Setup setup = PeerWire.readSetup(in);
        boolean failFast = in.readBoolean();
        try (PeerSide side = new PeerSide(device, bind, setup, failFast, 0);
             WorkCompletions wc = WorkCompletions.allocate(16);
             SendWorkRequests send = SendWorkRequests.allocate(1, 1)) {
            org.rdmashuffle.verbs.QueuePairEndpoint theirs = PeerWire.readEndpoint(in);
            PeerWire.write(out, side.qp.localEndpoint(side.options));
            PeerWire.write(out, side.remote());
            out.flush();
            side.qp.connect(theirs, side.options);
            // Only now may the test post: a request reaching a QP still short of RTS (say, the read past
            // the region a test sends at once) moves it to ERR, and the move to RTS then fails.
            out.writeByte(PeerWire.CONNECTED);
            out.flush();
            List<PeerWire.Seen> received = new ArrayList<>();
            List<PeerWire.Seen> sent = new ArrayList<>();
            while (true) {
                byte op;
                try {
                    op = in.readByte();
                } catch (EOFException gone) {
                    return;
                }
                switch (op) {
                    case PeerWire.FILL -> {
                        long seed = in.readLong();
                        byte[] data = new byte[setup.dataBytes()];
                        new Random(seed).nextBytes(data);
                        side.region.segment().asSlice(0, data.length).copyFrom(java.lang.foreign.MemorySegment.ofArray(data));
                        out.writeByte('k');
                    }
                    case PeerWire.DUMP -> {
                        long offset = in.readLong();
                        int length = in.readInt();
                        if (offset < 0 || length < 0 || offset + length > side.region.length()) {
                            throw new IOException("dump outside the region: " + length + " bytes at " + offset);
                        }
                        out.writeInt(length);
                        out.write(side.region.segment().asSlice(offset, length).toArray(ValueLayout.JAVA_BYTE));
                    }
                    case PeerWire.RECEIVED -> {
                        int want = Math.min(in.readInt(), PeerWire.MAX_RECEIVES);
                        long deadline = System.nanoTime() + Math.min(in.readInt(), 120_000) * 1_000_000L;
                        while (received.size() < want && System.nanoTime() < deadline) {
                            poll(side, wc, received, sent);
                        }
                        int n = Math.min(want, received.size());
                        out.writeInt(n);
                        for (int i = 0; i < n; i++) {
                            PeerWire.write(out, received.remove(0));
                        }
                    }
                    case PeerWire.SEND -> {
                        int offset = in.readInt();
                        int length = in.readInt();
                        int immediate = in.readInt();
                        if (offset < 0 || length < 0 || (long) offset + length > setup.dataBytes()) {
                            throw new IOException("send outside the data: " + length + " bytes at " + offset);
                        }
                        send.get(0).reset().wrId(77).opcode(WorkRequestOpcode.SEND_WITH_IMM).flags(SendFlags.SIGNALED)
                                .immediate(immediate).sge(0, side.region, offset, length).sgeCount(1);
                        side.qp.postSend(send, 1);
                        long deadline = System.nanoTime() + 120_000_000_000L;
                        while (sent.isEmpty() && System.nanoTime() < deadline) {
                            poll(side, wc, received, sent);
                        }
                        out.writeInt(sent.isEmpty() ? -1 : sent.remove(0).status());
                    }
                    case PeerWire.STATE -> out.writeInt(side.qp.query().state().ordinal());
                    case PeerWire.END -> {
                        out.writeByte('k');
                        out.flush();
                        return;
                    }
                    default -> throw new IOException("unknown command " + op);
                }
                out.flush();
            }
        }
    }

    private static void poll(PeerSide side, WorkCompletions wc, List<PeerWire.Seen> received, List<PeerWire.Seen> sent) {
        int n = side.cq.poll(wc);
        for (int i = 0; i < n; i++) {
            PeerWire.Seen seen = new PeerWire.Seen(wc.wrId(i), wc.statusCode(i), wc.opcodeCode(i), wc.byteLength(i),
                    wc.immediate(i), wc.hasImmediate(i));
            boolean receive = wc.isSuccess(i) ? wc.opcode(i) == WorkCompletionOpcode.RECV : wc.wrId(i) >= 1000;
            (receive ? received : sent).add(seen);
        }
        if (n == 0) {
            Thread.onSpinWait();
        }
    }
}
