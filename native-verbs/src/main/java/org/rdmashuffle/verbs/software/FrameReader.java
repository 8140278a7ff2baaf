package org.rdmashuffle.verbs.software;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The reading half of a link, driven by its loop whenever the socket has bytes: frames are parsed
 * out of a buffer that each read fills as far as it can (a burst of small frames costs one system
 * call), and each payload goes where the frame's {@link Landing} says as its bytes arrive, over as
 * many reads as it takes. A payload too large for the buffer goes from the socket straight into place
 * once what was buffered of it is copied there. One 16 KiB buffer per link, the only memory the
 * reader holds.
 *
 * <p>Copies into a QP's memory are made holding the link's landing lock, each after checking the QP
 * still takes data: a QP that fails takes that lock once, and after it its memory is not touched.
 */
final class FrameReader {
    /** The buffer's size: also the largest payload copied through it rather than read into place. */
    static final int CAPACITY = 16 << 10;
    /** Socket reads per turn, so one busy link cannot keep its loop from the others. */
    private static final int READS_PER_TURN = 16;

    /** Says where a frame's payload goes: a landing, or null when it has none. */
    @FunctionalInterface
    interface Dispatch {
        Landing onHeader(Frame f) throws IOException;
    }

    private final SocketChannel channel;
    private final ReentrantLock landing;
    /** Unread bytes between position and limit. */
    private final ByteBuffer in = ByteBuffer.allocateDirect(CAPACITY).limit(0);
    /** The same memory, for copies into registered memory at absolute offsets. */
    private final MemorySegment inMemory = MemorySegment.ofBuffer(in.duplicate().clear());
    private final Frame frame = new Frame(); // one per link, filled by each header it reads
    /** The payload being received, or null between frames. */
    private Landing current;

    FrameReader(SocketChannel channel, ReentrantLock landing) {
        this.channel = channel;
        this.landing = landing;
    }

    /**
     * Parses and dispatches what the socket has now (at most {@value #READS_PER_TURN} reads), and
     * returns; false when the stream ended cleanly between frames. An end inside a frame is an
     * {@link EOFException}.
     */
    boolean readAvailable(Dispatch dispatch) throws IOException {
        int reads = 0;
        while (true) {
            if (current == null) {
                if (in.remaining() < Frame.HEADER) {
                    if (reads++ == READS_PER_TURN) {
                        return true;
                    }
                    int n = fill();
                    if (n < 0) {
                        if (in.hasRemaining()) {
                            throw new EOFException("connection closed in the middle of a frame header");
                        }
                        return false;
                    }
                    if (n == 0) {
                        return true;
                    }
                    continue;
                }
                parseHeader(frame);
                current = dispatch.onHeader(frame);
                if (current == null) {
                    continue;
                }
            }
            Landing l = current;
            while (l.left > 0) {
                if (in.hasRemaining()) {
                    int n = (int) Math.min(in.remaining(), l.left);
                    land(l, n);
                    in.position(in.position() + n);
                    continue;
                }
                if (reads++ == READS_PER_TURN) {
                    return true;
                }
                long n = !l.skipping() && l.left >= CAPACITY ? readInto(l) : fill();
                if (n < 0) {
                    throw new EOFException("connection closed with " + l.left + " bytes of a frame missing");
                }
                if (n == 0) {
                    return true;
                }
            }
            current = null;
            l.finish();
        }
    }

    /** Copies {@code n} buffered bytes into place, or counts them skipped. */
    private void land(Landing l, int n) {
        if (l.skipping()) {
            l.left -= n;
            return;
        }
        landing.lock();
        try {
            if (l.guard != null && !l.guard.acceptsData()) {
                l.drop();
                l.left -= n;
                return;
            }
            l.copyFrom(inMemory, in.position(), n);
        } finally {
            landing.unlock();
        }
    }

    /** Reads from the socket straight into place. */
    private long readInto(Landing l) throws IOException {
        landing.lock();
        try {
            if (l.guard != null && !l.guard.acceptsData()) {
                l.drop();
                return 1; // nothing read: the loop goes on, skipping the rest through the buffer
            }
            return l.readFrom(channel);
        } finally {
            landing.unlock();
        }
    }

    /** Reads what the socket has into the buffer after what is unread; the bytes read, 0 none now, -1 at the end. */
    private int fill() throws IOException {
        in.compact(); // now in write mode: unread bytes at the start
        try {
            return channel.read(in);
        } finally {
            in.flip();
        }
    }

    private void parseHeader(Frame f) throws IOException {
        int p = in.position();
        f.payload = null;
        f.file = null;
        f.type = in.get(p);
        f.flags = in.get(p + 1);
        f.status = in.getInt(p + 4);
        f.sequence = in.getLong(p + 8);
        f.address = in.getLong(p + 16);
        f.rkey = in.getInt(p + 24);
        f.length = in.getInt(p + 28);
        f.a = in.getLong(p + 32);
        f.b = in.getLong(p + 40);
        f.dstQpn = in.getInt(p + 48);
        f.srcQpn = in.getInt(p + 52);
        in.position(p + Frame.HEADER);
        if (f.length < 0) {
            throw new IOException("malformed frame: negative length " + f.length + " (type " + f.type + ")");
        }
    }
}
