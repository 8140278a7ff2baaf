package org.rdmashuffle.verbs.software;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

/**
 * The link writer never waits for the socket: a frame posted while it is idle is on the wire when
 * {@code add} returns (written by the posting thread, no loop involved); a peer that stops reading
 * makes it ask the loop for room, never blocks the poster; and a QP that leaves while its frame is
 * half written gets its bytes copied, so what arrives is what it posted, not what its memory
 * holds after it left.
 */
class FrameWriterTest {
    /** A wire whose writing end is non-blocking, as a link's is. */
    private static LoopbackWire wire() throws IOException {
        LoopbackWire w = new LoopbackWire();
        w.out.configureBlocking(false);
        return w;
    }

    @FunctionalInterface
    private interface Reading {
        void run() throws Exception;
    }

    /** Runs {@code r} on a thread of its own while the loop's part ({@code onWritable}) is played here; rethrows its failure. */
    private static void readWhileWriting(FrameWriter writer, Reading r) throws Exception {
        java.util.concurrent.atomic.AtomicReference<Throwable> failed = new java.util.concurrent.atomic.AtomicReference<>();
        Thread reader = Thread.ofPlatform().start(() -> {
            try {
                r.run();
            } catch (Throwable t) {
                failed.set(t);
            }
        });
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (reader.isAlive() && System.nanoTime() < deadline) {
            writer.onWritable(); // what the loop does when the socket has room
            reader.join(1);
        }
        assertFalse(reader.isAlive(), "the peer did not get everything within 60 s");
        if (failed.get() != null) {
            throw new AssertionError("the peer's side failed", failed.get());
        }
    }

    private static Frame send(int srcQpn, long sequence, ByteBuffer payload) {
        Frame f = Frame.request(Frame.SEND, sequence);
        f.srcQpn = srcQpn;
        f.length = payload.remaining();
        f.payload = new ByteBuffer[] {payload};
        return f;
    }

    @Test
    void aChainOfFramesQueued_staysOffTheWireUntilFlushed_thenGoesOutWholeAndInOrder() throws Exception {
        try (LoopbackWire w = wire()) {
            FrameWriter writer = new FrameWriter(w.out, on -> { });
            for (int i = 0; i < 4; i++) {
                writer.queue(send(7, i, ByteBuffer.wrap(new byte[] {(byte) i})));
            }
            w.in.configureBlocking(false);
            ByteBuffer got = ByteBuffer.allocate(4 * (Frame.HEADER + 1));
            assertEquals(0, w.in.read(got), "queued frames were written before the chain's flush");
            writer.flush();
            while (got.hasRemaining() && w.in.read(got) > 0) {
                // one gathering write on the sending side; loopback may still hand it over in parts
            }
            assertEquals(4 * (Frame.HEADER + 1), got.position(), "the chain's four frames after one flush");
            for (int i = 0; i < 4; i++) {
                int at = i * (Frame.HEADER + 1);
                assertEquals(i, got.getLong(at + 8), "frame " + i + " in posting order");
                assertEquals(i, got.get(at + Frame.HEADER));
            }
        }
    }

    @Test
    void aFramePostedWhileTheWriterIsIdle_isOnTheWireWhenAddReturns() throws Exception {
        try (LoopbackWire w = wire()) {
            AtomicInteger roomAsked = new AtomicInteger();
            FrameWriter writer = new FrameWriter(w.out, on -> roomAsked.incrementAndGet());
            writer.add(send(7, 1, ByteBuffer.wrap(new byte[] {1, 2, 3})));
            // Nothing else runs: no loop, no writer thread. The bytes are in the socket already.
            w.in.configureBlocking(false);
            ByteBuffer got = ByteBuffer.allocate(Frame.HEADER + 3);
            w.in.read(got);
            assertEquals(Frame.HEADER + 3, got.position(), "the whole frame was written by the posting thread");
            assertEquals(7, got.getInt(52));
            assertArrayEquals(new byte[] {1, 2, 3}, Arrays.copyOfRange(got.array(), Frame.HEADER, Frame.HEADER + 3));
            assertEquals(0, roomAsked.get(), "the socket had room: the loop was never asked");
        }
    }

    @Test
    void aPeerThatStopsReading_neverBlocksAPostingThread() throws Exception {
        try (LoopbackWire w = wire()) {
            AtomicInteger roomAsked = new AtomicInteger();
            FrameWriter writer = new FrameWriter(w.out, on -> roomAsked.addAndGet(on ? 1 : -1));
            byte[] block = new byte[1 << 20];
            long start = System.nanoTime();
            for (int i = 0; i < 64; i++) { // 64 MiB: far more than the socket buffers hold
                writer.add(send(7, i, ByteBuffer.wrap(block)));
            }
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(20), "posting never waited for the peer");
            assertEquals(1, roomAsked.get(), "the loop was asked once for room, and not told to stop");
            // The loop's part once the peer reads again: every frame arrives, in order.
            readWhileWriting(writer, () -> {
                for (int i = 0; i < 64; i++) {
                    byte[] header = w.read(Frame.HEADER);
                    assertEquals(i, ByteBuffer.wrap(header).getLong(8));
                    w.read(block.length);
                }
            });
            assertEquals(0, roomAsked.get(), "all written: the loop was told it need not call again");
        }
    }

    @Test
    void aQueuePairLeavingWhileItsFrameIsHalfWritten_hasItsBytesCopied_andItsQueuedFramesDropped() throws Exception {
        try (LoopbackWire w = wire()) {
            FrameWriter writer = new FrameWriter(w.out, on -> { });
            byte[] memory = new byte[16 << 20]; // more than loopback's socket buffers take, less than the copy bound
            Arrays.fill(memory, (byte) 1);
            writer.add(send(7, 1, ByteBuffer.wrap(memory))); // more than the socket takes at once
            writer.add(send(7, 2, ByteBuffer.wrap(memory))); // queued behind it
            writer.add(send(9, 3, ByteBuffer.wrap(new byte[] {5}))); // another QP's
            assertTrue(writer.detach(7));
            Arrays.fill(memory, (byte) 2); // the QP's memory is reused after it left
            readWhileWriting(writer, () -> {
                byte[] header = w.read(Frame.HEADER);
                assertEquals(1, ByteBuffer.wrap(header).getLong(8));
                byte[] payload = w.read(memory.length);
                int changed = 0;
                while (changed < payload.length && payload[changed] == 1) {
                    changed++;
                }
                assertEquals(payload.length, changed, "the QP's memory was read after it left, from this byte on");
                byte[] next = w.read(Frame.HEADER + 1);
                assertEquals(3, ByteBuffer.wrap(next).getLong(8), "the leaving QP's queued frame was dropped");
            });
            w.in.configureBlocking(false);
            assertEquals(0, w.in.read(ByteBuffer.allocate(1)), "nothing more was written");
            assertFalse(w.out.socket().isClosed());
        }
    }
}
