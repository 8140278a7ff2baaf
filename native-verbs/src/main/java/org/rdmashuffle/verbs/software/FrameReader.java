package org.rdmashuffle.verbs.software;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * The reading half of a link: frames parsed out of a buffer that each read from the socket
 * fills as far as it can, so a burst of small frames (read requests, ACKs, small answers) costs one
 * system call, not one or two per frame. A payload too large for the buffer goes from the socket
 * straight into its destination once what was buffered of it is copied there. One buffer per link, the
 * only memory the reader holds (16 KiB): an engine with a thousand peers pays for a thousand.
 */
final class FrameReader {
    /** The buffer's size: also the largest answer copied through it rather than read into place. */
    static final int CAPACITY = 16 << 10;

    private final SocketChannel channel;
    /** Unread bytes between position and limit. */
    private final ByteBuffer in = ByteBuffer.allocateDirect(CAPACITY).limit(0);
    /** The same memory, for copies into registered memory at absolute offsets. */
    private final MemorySegment inMemory = MemorySegment.ofBuffer(in.duplicate().clear());

    FrameReader(SocketChannel channel) {
        this.channel = channel;
    }

    /** Reads the next header into {@code f}; false at a clean end of stream, before any byte of it. */
    boolean next(Frame f) throws IOException {
        if (!buffer(Frame.HEADER, true)) {
            return false;
        }
        int p = in.position();
        f.payload = null;
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
        return true;
    }

    /** Copies the next {@code n} payload bytes (at most {@link #CAPACITY}) to {@code dst} at {@code offset}. */
    void copyTo(MemorySegment dst, long offset, int n) throws IOException {
        buffer(n, false);
        MemorySegment.copy(inMemory, in.position(), dst, offset, n);
        in.position(in.position() + n);
    }

    /** Reads the next {@code n} payload bytes into {@code into}, in order: what is buffered by copy, the rest from the socket. */
    void readInto(ByteBuffer[] into, long n) throws IOException {
        long left = n;
        for (int i = 0; i < into.length && left > 0 && in.hasRemaining(); i++) {
            int k = (int) Math.min(Math.min(in.remaining(), into[i].remaining()), left);
            int limit = in.limit();
            in.limit(in.position() + k);
            into[i].put(in);
            in.limit(limit);
            left -= k;
        }
        while (left > 0) { // the buffer is empty now: the socket's bytes go straight into place
            long r = channel.read(into);
            if (r < 0) {
                throw new EOFException("connection closed with " + left + " bytes of a message missing");
            }
            left -= r;
        }
    }

    /** The next {@code n} payload bytes (a small one: an ATTACH's token), as an array. */
    byte[] readBytes(int n) throws IOException {
        byte[] b = new byte[n];
        readInto(ByteBuffer.wrap(b));
        return b;
    }

    void readInto(ByteBuffer into) throws IOException {
        readInto(new ByteBuffer[] {into}, into.remaining());
    }

    /** Drops the next {@code n} payload bytes, keeping the stream in step after a refused request. */
    void discard(long n) throws IOException {
        long left = n;
        while (left > 0) {
            if (!in.hasRemaining()) {
                buffer(1, false);
            }
            int k = (int) Math.min(in.remaining(), left);
            in.position(in.position() + k);
            left -= k;
        }
    }

    /**
     * Makes at least {@code n} bytes buffered (n at most the capacity), reading as much as the socket
     * has; false only when the stream ended with nothing buffered and that is allowed.
     */
    private boolean buffer(int n, boolean endAllowed) throws IOException {
        if (in.remaining() >= n) {
            return true;
        }
        in.compact(); // now in write mode: unread bytes at the start
        try {
            while (in.position() < n) {
                if (channel.read(in) < 0) {
                    if (endAllowed && in.position() == 0) {
                        return false;
                    }
                    throw new EOFException("connection closed with " + (n - in.position()) + " bytes of a message missing");
                }
            }
        } finally {
            in.flip();
        }
        return true;
    }
}
