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
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;

import org.junit.jupiter.api.Test;

/**
 * Frames come out of the reader whole and in order however the stream is cut and however many
 * turns it takes: headers split across reads, many frames in one read, payloads smaller and larger
 * than the buffer, partly buffered when their header is parsed; a refused payload is skipped in step;
 * a QP that fails mid-payload gets none of the rest; an end in mid-frame is an error.
 */
class FrameReaderTest {
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

    /** Reads frames as the loop would (non-blocking, a turn at a time) until {@code dispatch} saw {@code frames} or the stream ended. */
    private static boolean readUntil(FrameReader in, FrameReader.Dispatch dispatch, int[] seen, int frames) throws Exception {
        long deadline = System.nanoTime() + 60_000_000_000L; // generous: the Soft-RoCE guest emulates its CPU
        while (seen[0] < frames) {
            if (!in.readAvailable(dispatch)) {
                return false;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("only " + seen[0] + " of " + frames + " frames within 60 s");
            }
            Thread.sleep(0, 100_000);
        }
        return true;
    }

    private static FrameReader reader(LoopbackWire w) throws IOException {
        w.in.configureBlocking(false);
        return new FrameReader(w.in, new ReentrantLock());
    }

    @Test
    void framesCutAnywhereComeOutWholeAndInOrder() throws Exception {
        byte[] small = bytes(100, 1);
        byte[] large = bytes(FrameReader.CAPACITY * 3 + 17, 2); // larger than the buffer: read into place
        byte[] refused = bytes(FrameReader.CAPACITY + 5, 3);
        byte[] stream = concat(frame(Frame.READ, 1, new byte[0]), frame(Frame.READ_RESPONSE, 2, small),
                frame(Frame.SEND, 3, large), frame(Frame.WRITE, 4, refused), frame(Frame.ACK, 5, new byte[0]));
        for (int piece : new int[] {stream.length, 7, 48, 1000, 4099}) {
            try (LoopbackWire w = new LoopbackWire(); Arena arena = Arena.ofShared()) {
                Thread writer = Thread.ofPlatform().start(() -> {
                    try {
                        w.write(stream, piece);
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                });
                FrameReader in = reader(w);
                MemorySegment landed = arena.allocate(200);
                MemorySegment first = arena.allocate(1000);
                MemorySegment rest = arena.allocate(large.length - 1000);
                List<String> frames = new ArrayList<>();
                List<String> done = new ArrayList<>();
                Landing landing = new Landing();
                int[] seen = {0};
                FrameReader.Dispatch dispatch = f -> {
                    seen[0]++;
                    frames.add(f.type + ":" + f.sequence + ":" + f.length + ":" + f.a);
                    String name = "landed " + f.sequence;
                    return switch (f.type) {
                        case Frame.READ_RESPONSE -> landing.into(null, () -> done.add(name)).add(landed, 50, f.length);
                        case Frame.SEND -> landing.into(null, () -> done.add(name)).add(first, 0, 1000)
                                .add(rest, 0, f.length - 1000);
                        case Frame.WRITE -> landing.skip(f.length);
                        default -> null;
                    };
                };
                assertTrue(readUntil(in, dispatch, seen, 5));
                assertEquals(List.of(Frame.READ + ":1:0:-1", Frame.READ_RESPONSE + ":2:100:-2",
                        Frame.SEND + ":3:" + large.length + ":-3", Frame.WRITE + ":4:" + refused.length + ":-4",
                        Frame.ACK + ":5:0:-5"), frames, "piece " + piece);
                assertEquals(List.of("landed 2", "landed 3"), done, "piece " + piece);
                assertArrayEquals(small, landed.asSlice(50, 100).toArray(ValueLayout.JAVA_BYTE), "piece " + piece);
                assertArrayEquals(large, concat(first.toArray(ValueLayout.JAVA_BYTE), rest.toArray(ValueLayout.JAVA_BYTE)),
                        "piece " + piece);
                writer.join();
                w.out.close();
                assertFalse(readUntil(in, dispatch, seen, 6), "a clean end between frames");
            }
        }
    }

    @Test
    void aQueuePairThatFailsWhileItsPayloadArrives_getsNoMoreOfItsBytes() throws Exception {
        byte[] payload = bytes(FrameReader.CAPACITY * 4, 5);
        byte[] whole = concat(frame(Frame.SEND, 1, payload), frame(Frame.ACK, 2, new byte[0]));
        try (LoopbackWire w = new LoopbackWire(); Arena arena = Arena.ofShared()) {
            FrameReader in = reader(w);
            MemorySegment target = arena.allocate(payload.length);
            AtomicBoolean accepts = new AtomicBoolean(true);
            List<String> done = new ArrayList<>();
            Landing landing = new Landing();
            int[] seen = {0};
            FrameReader.Dispatch dispatch = f -> {
                seen[0]++;
                if (f.type != Frame.SEND) {
                    return null;
                }
                return landing.into(accepts::get, new Landing.Done() {
                    @Override
                    public void landed() {
                        done.add("landed");
                    }

                    @Override
                    public void dropped() {
                        done.add("dropped");
                    }
                }).add(target, 0, f.length);
            };
            w.write(java.util.Arrays.copyOf(whole, Frame.HEADER + 1000), Frame.HEADER + 1000);
            readUntil(in, dispatch, seen, 1);
            while (in.readAvailable(dispatch) && target.get(ValueLayout.JAVA_BYTE, 999) != payload[999]) {
                Thread.sleep(1);
            }
            accepts.set(false); // the QP fails with 1000 bytes landed
            w.write(java.util.Arrays.copyOfRange(whole, Frame.HEADER + 1000, whole.length), 5000);
            assertTrue(readUntil(in, dispatch, seen, 2));
            assertEquals(List.of("dropped"), done);
            byte[] after = target.asSlice(1000, payload.length - 1000).toArray(ValueLayout.JAVA_BYTE);
            assertArrayEquals(new byte[payload.length - 1000], after, "nothing landed after the QP failed");
        }
    }

    @Test
    void anEndInTheMiddleOfAFrameIsAnError() throws Exception {
        byte[] whole = frame(Frame.SEND, 9, bytes(500, 4));
        try (LoopbackWire w = new LoopbackWire()) {
            w.write(java.util.Arrays.copyOf(whole, 30), 30); // part of the header
            w.out.close();
            FrameReader in = reader(w);
            assertThrows(EOFException.class, () -> readUntil(in, f -> null, new int[1], 1));
        }
        try (LoopbackWire w = new LoopbackWire(); Arena arena = Arena.ofShared()) {
            w.write(java.util.Arrays.copyOf(whole, Frame.HEADER + 200), 64); // part of the payload
            w.out.close();
            FrameReader in = reader(w);
            Landing landing = new Landing();
            MemorySegment target = arena.allocate(500);
            assertThrows(EOFException.class, () -> readUntil(in, f -> landing.into(null, () -> { }).add(target, 0, f.length),
                    new int[1], 2));
        }
    }

    @Test
    void aNegativeLengthIsMalformed() throws Exception {
        byte[] bad = frame(Frame.SEND, 1, new byte[0]);
        ByteBuffer.wrap(bad).putInt(28, -5);
        try (LoopbackWire w = new LoopbackWire()) {
            w.write(bad, bad.length);
            FrameReader in = reader(w);
            IOException e = assertThrows(IOException.class, () -> readUntil(in, f -> null, new int[1], 1));
            assertTrue(e.getMessage().contains("negative length"), e.getMessage());
        }
    }
}
