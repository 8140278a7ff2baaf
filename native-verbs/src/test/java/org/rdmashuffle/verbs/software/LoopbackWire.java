package org.rdmashuffle.verbs.software;

import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

/** A connected pair of sockets on loopback, both blocking at first: {@code out} writes what {@code in} reads. */
final class LoopbackWire implements AutoCloseable {
    final SocketChannel out;
    final SocketChannel in;

    LoopbackWire() throws IOException {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            out = SocketChannel.open(server.getLocalAddress());
            in = server.accept();
        }
    }

    /** Writes {@code bytes} in pieces of {@code piece} bytes, each flushed on its own ({@code out} blocking). */
    void write(byte[] bytes, int piece) throws IOException {
        for (int i = 0; i < bytes.length; i += piece) {
            ByteBuffer b = ByteBuffer.wrap(bytes, i, Math.min(piece, bytes.length - i));
            while (b.hasRemaining()) {
                out.write(b);
            }
        }
    }

    /** Reads exactly {@code n} bytes from {@code in} (blocking). */
    byte[] read(int n) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(n);
        while (b.hasRemaining()) {
            if (in.read(b) < 0) {
                throw new EOFException("after " + b.position() + " bytes");
            }
        }
        return b.array();
    }

    @Override
    public void close() throws IOException {
        out.close();
        in.close();
    }
}
