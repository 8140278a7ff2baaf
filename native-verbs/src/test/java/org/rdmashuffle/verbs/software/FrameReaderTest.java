package org.rdmashuffle.verbs.software;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Random;

import org.junit.jupiter.api.Test;

/**
 * Frames come out of the reader's buffer whole and in order however the stream is cut: headers split
 * across reads, many frames in one read, payloads smaller and larger than the buffer, partly buffered
 * when their header is parsed; a refused payload is skipped in step; an end in mid-frame is an error.
 */
class FrameReaderTest {
    /** A connected pair of sockets on loopback: {@code out} writes what {@code in} reads. */
    private static final class Wire implements AutoCloseable {
        final SocketChannel out;
        final SocketChannel in;

        Wire() throws IOException {
            try (ServerSocketChannel server = ServerSocketChannel.open()) {
                server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
                out = SocketChannel.open(server.getLocalAddress());
                in = server.accept();
            }
        }

        /** Writes {@code bytes} in pieces of {@code piece} bytes, each flushed on its own. */
        void write(byte[] bytes, int piece) throws IOException {
            for (int i = 0; i < bytes.length; i += piece) {
                ByteBuffer b = ByteBuffer.wrap(bytes, i, Math.min(piece, bytes.length - i));
                while (b.hasRemaining()) {
                    out.write(b);
                }
            }
        }

        @Override
        public void close() throws IOException {
            out.close();
            in.close();
        }
    }

    private static byte[] frame(byte type, long sequence, byte[] payload) {
        Frame f = Frame.request(type, sequence);
        f.length = payload.length;
        f.rkey = 77;
        f.a = -sequence;
        ByteBuffer all = ByteBuffer.allocate(Frame.HEADER + payload.length);
        f.encode(all);
        all.position(Frame.HEADER).put(payload);
        return all.array();
    }

    private static byte[] concat(byte[]... parts) {
        ByteBuffer all = ByteBuffer.allocate(java.util.Arrays.stream(parts).mapToInt(p -> p.length).sum());
        for (byte[] p : parts) {
            all.put(p);
        }
        return all.array();
    }

    private static byte[] bytes(int n, int seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void framesCutAnywhereComeOutWholeAndInOrder() throws Exception {
        byte[] small = bytes(100, 1);
        byte[] large = bytes(FrameReader.CAPACITY * 3 + 17, 2); // larger than the buffer: read into place
        byte[] refused = bytes(FrameReader.CAPACITY + 5, 3);
        byte[] stream = concat(frame(Frame.READ, 1, new byte[0]), frame(Frame.READ_RESPONSE, 2, small),
                frame(Frame.SEND, 3, large), frame(Frame.WRITE, 4, refused), frame(Frame.ACK, 5, new byte[0]));
        for (int piece : new int[] {stream.length, 7, 48, 1000, 4099}) {
            try (Wire w = new Wire(); Arena arena = Arena.ofConfined()) {
                Thread writer = Thread.ofPlatform().start(() -> {
                    try {
                        w.write(stream, piece);
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                });
                FrameReader in = new FrameReader(w.in);
                Frame f = new Frame();

                assertTrue(in.next(f));
                assertEquals(Frame.READ, f.type);
                assertEquals(1, f.sequence);
                assertEquals(0, f.length);

                assertTrue(in.next(f));
                assertEquals(Frame.READ_RESPONSE, f.type);
                assertEquals(2, f.sequence);
                assertEquals(-2, f.a);
                MemorySegment landed = arena.allocate(200);
                in.copyTo(landed, 50, f.length); // copied from the buffer to an offset
                assertArrayEquals(small, landed.asSlice(50, 100).toArray(ValueLayout.JAVA_BYTE), "piece " + piece);

                assertTrue(in.next(f));
                assertEquals(Frame.SEND, f.type);
                MemorySegment first = arena.allocate(1000);
                MemorySegment rest = arena.allocate(large.length - 1000);
                in.readInto(new ByteBuffer[] {first.asByteBuffer(), rest.asByteBuffer()}, f.length);
                assertArrayEquals(large, concat(first.toArray(ValueLayout.JAVA_BYTE), rest.toArray(ValueLayout.JAVA_BYTE)),
                        "piece " + piece);

                assertTrue(in.next(f));
                assertEquals(Frame.WRITE, f.type);
                in.discard(f.length);

                assertTrue(in.next(f));
                assertEquals(Frame.ACK, f.type);
                assertEquals(5, f.sequence);
                writer.join();
                w.out.close();
                assertFalse(in.next(f), "a clean end between frames");
            }
        }
    }

    @Test
    void anEndInTheMiddleOfAFrameIsAnError() throws Exception {
        byte[] whole = frame(Frame.SEND, 9, bytes(500, 4));
        try (Wire w = new Wire()) {
            w.write(java.util.Arrays.copyOf(whole, 30), 30); // part of the header
            w.out.close();
            assertThrows(EOFException.class, () -> new FrameReader(w.in).next(new Frame()));
        }
        try (Wire w = new Wire(); Arena arena = Arena.ofConfined()) {
            w.write(java.util.Arrays.copyOf(whole, Frame.HEADER + 200), 64); // part of the payload
            w.out.close();
            FrameReader in = new FrameReader(w.in);
            Frame f = new Frame();
            assertTrue(in.next(f));
            assertThrows(EOFException.class, () -> in.copyTo(arena.allocate(500), 0, f.length));
        }
    }

    @Test
    void aNegativeLengthIsMalformed() throws Exception {
        byte[] bad = frame(Frame.SEND, 1, new byte[0]);
        ByteBuffer.wrap(bad).putInt(28, -5);
        try (Wire w = new Wire()) {
            w.write(bad, bad.length);
            IOException e = assertThrows(IOException.class, () -> new FrameReader(w.in).next(new Frame()));
            assertTrue(e.getMessage().contains("negative length"), e.getMessage());
        }
    }
}
