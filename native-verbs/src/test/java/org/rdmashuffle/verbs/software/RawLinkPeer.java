package org.rdmashuffle.verbs.software;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * A peer device written by hand, as a test (or an attacker) speaks the link protocol: the hello,
 * ATTACH with a token, and raw frames.
 */
final class RawLinkPeer implements AutoCloseable {
    final Socket socket;
    final DataOutputStream out;
    final DataInputStream in;

    /** Dials the listener at {@code port} on loopback and says hello; the listener's verdict is {@link #helloVerdict}. */
    RawLinkPeer(int port) throws IOException {
        socket = new Socket(InetAddress.getLoopbackAddress(), port);
        socket.setSoTimeout(10_000);
        out = new DataOutputStream(socket.getOutputStream());
        in = new DataInputStream(socket.getInputStream());
        out.writeInt(Frame.HELLO_MAGIC);
        out.flush();
    }

    int helloVerdict() throws IOException {
        return in.readInt();
    }

    /** Asks to join QP {@code dstQpn} as QP {@code srcQpn}; returns the ATTACH_ACK's status. */
    int attach(int srcQpn, int dstQpn, String token) throws IOException {
        byte[] t = token.getBytes(StandardCharsets.US_ASCII);
        Frame f = Frame.request(Frame.ATTACH, 0);
        f.srcQpn = srcQpn;
        f.dstQpn = dstQpn;
        f.length = t.length;
        out.write(f.encode().array());
        out.write(t);
        out.flush();
        Frame ack = readHeader();
        if (ack.type != Frame.ATTACH_ACK || ack.dstQpn != srcQpn || ack.srcQpn != dstQpn) {
            throw new IOException("not an ATTACH_ACK for QP " + srcQpn + ": type " + ack.type);
        }
        return ack.status;
    }

    void write(Frame f) throws IOException {
        out.write(f.encode().array());
        out.flush();
    }

    /** The next frame's header (its payload, if any, is left unread). */
    Frame readHeader() throws IOException {
        ByteBuffer h = ByteBuffer.wrap(in.readNBytes(Frame.HEADER));
        if (h.remaining() < Frame.HEADER) {
            throw new java.io.EOFException("the link closed");
        }
        Frame f = Frame.request(h.get(0), h.getLong(8));
        f.flags = h.get(1);
        f.status = h.getInt(4);
        f.address = h.getLong(16);
        f.rkey = h.getInt(24);
        f.length = h.getInt(28);
        f.a = h.getLong(32);
        f.b = h.getLong(40);
        f.dstQpn = h.getInt(48);
        f.srcQpn = h.getInt(52);
        return f;
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
