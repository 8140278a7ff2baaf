package org.rdmashuffle.core.client;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import org.rdmashuffle.core.buffer.RegisteredBuffer;
import org.rdmashuffle.core.protocol.BlockDescriptor;

/**
 * A block larger than one fetch buffer, of any size: read in pieces of one buffer each, at most
 * {@code window} of them read ahead of its consumer, and handed over as a stream as soon as a piece
 * lands. When the consumer is done with a piece, its buffer reads the next one ({@link Recycler}), so
 * a stream under way never waits for buffers others hold, and the block never needs more registered
 * memory than its window, whatever its size (more than the fetch buffer memory, more than 2 GiB).
 * Nor more heap: its length is the peer's word, so nothing here is sized by it. The pieces landed and
 * not yet read sit in one slot each of a ring as long as the window (a piece's buffer reads the piece
 * a window further on only once its consumer is done with it, so those waiting always fit), and a
 * block claiming petabytes costs what one of a few megabytes does until its bytes arrive.
 *
 * <p>Two sides. The fetcher's (under its {@link PeerFetcher}'s lock): which pieces are queued, the
 * current descriptor. The consumer's (under this object's monitor): pieces landed and not yet read,
 * a failure, closed. A failure after hand-over reaches the consumer as an {@link IOException} from
 * the stream naming the block; before it, the listener's {@code onBlockFetchFailure}, as for any block.
 */
final class PiecedBlock {
    /** What the fetcher does with a piece's buffer once its consumer is done with it, or with a closed block. */
    interface Recycler {
        /** Reads the block's next piece into {@code buffer}, or releases it. */
        void recycle(PiecedBlock block, RegisteredBuffer buffer);

        /** The consumer closed the block: its queued pieces are dropped. */
        void closed(PiecedBlock block);
    }

    final Wanted wanted;
    final long length;
    final long rawLength;
    final int pieceBytes;
    final int pieces;
    /** Pieces read ahead of the consumer: the buffers the block circulates, and the slots of its ring. */
    final int window;
    private final Recycler recycler;
    private final long waitNanos;

    // The fetcher's side, under its lock.
    BlockDescriptor where;
    long describedAt;
    /** The output of a held answer it reads, counted as read until it has no piece left to read; else null. */
    HeldOutputs.Output hold;
    int nextToQueue;
    boolean handedOver;
    /** Pieces set aside (with any buffer they hold) while the block is described again. */
    List<Read> parked;

    // The consumer's side, under this.
    /**
     * The pieces landed and not yet taken by the stream, piece {@code i} in slot {@code i % window}:
     * those are pieces {@code [nextToTake, nextToTake + window)}, as piece {@code i + window} is read
     * only once piece {@code i} was taken and read.
     */
    private final RegisteredBuffer[] landed;
    /** Where each landed piece starts in its buffer (by slot): its read's {@linkplain Read#lead lead}. */
    private final int[] leads;
    /** The piece the stream takes next. */
    private int nextToTake;
    /** Pieces landed so far, taken or not. */
    private int landedCount;
    private Throwable failure;
    private boolean closed;
    private boolean streamOpened;
    /** The piece the stream is reading: released with the block if the stream is not read to its end. */
    private RegisteredBuffer reading;
    /** Where the piece being read starts in {@link #reading}. */
    private int readingLead;

    /**
     * @param maxAhead the most pieces read ahead of the consumer (its window: fewer if the block has
     *                 fewer pieces)
     */
    PiecedBlock(Wanted wanted, BlockDescriptor where, long describedAt, int pieceBytes, int maxAhead, Recycler recycler,
                long waitNanos) {
        this.wanted = wanted;
        this.where = where;
        this.describedAt = describedAt;
        this.length = where.length();
        this.rawLength = where.rawLength();
        this.pieceBytes = pieceBytes;
        long n = length / pieceBytes + (length % pieceBytes == 0 ? 0 : 1);
        if (length <= 0 || n > ResponseCheck.MAX_PIECES || maxAhead < 1) { // refused before: ResponseCheck.tooLong
            throw new IllegalArgumentException(wanted.id + ": " + length + " bytes in " + n + " pieces, " + maxAhead + " ahead");
        }
        this.pieces = (int) n;
        this.window = Math.min(pieces, maxAhead);
        this.landed = new RegisteredBuffer[window];
        this.leads = new int[window];
        this.recycler = recycler;
        this.waitNanos = waitNanos;
    }

    /** The read of piece {@code i} under the current descriptor (fetcher's lock). */
    Read pieceRead(int i, long queuedAt, RegisteredBuffer buffer) {
        long offset = (long) i * pieceBytes;
        long len = Math.min(pieceBytes, length - offset);
        Read r = new Read(wanted, where.address() + offset, len, where.rkey(), rawLength, describedAt, queuedAt, this, i, buffer);
        if (hold != null) {
            hold.start();
            r.hold = hold;
        }
        return r;
    }

    /**
     * Piece {@code i} landed, {@code lead} bytes into {@code buffer}; false if the consumer closed the
     * block or it failed (the caller releases the buffer).
     */
    synchronized boolean landed(int i, RegisteredBuffer buffer, int lead) {
        if (closed || failure != null) {
            return false;
        }
        int slot = i % window;
        if (i < nextToTake || i >= nextToTake + window || landed[slot] != null) {
            // Cannot happen (a piece is read only once the one a window before it was taken): a bug, the stream says so.
            fail(new IllegalStateException(wanted.id + ": piece " + i + " landed while the stream takes piece " + nextToTake
                    + " of " + pieces + " (a window of " + window + ")"));
            return false;
        }
        landed[slot] = buffer;
        leads[slot] = lead;
        landedCount++;
        notifyAll();
        return true;
    }

    /** Every piece has landed: the fetcher has nothing more to do for it. */
    synchronized boolean allLanded() {
        return landedCount == pieces;
    }

    synchronized boolean isClosed() {
        return closed;
    }

    /** The fetch broke after hand-over: the stream fails with this, naming the block. */
    synchronized void fail(Throwable cause) {
        if (failure == null) {
            failure = cause;
        }
        notifyAll();
    }

    /** Releases every piece not yet read and tells the fetcher; idempotent. */
    void close() {
        List<RegisteredBuffer> release = new ArrayList<>();
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            for (int i = 0; i < landed.length; i++) {
                if (landed[i] != null) {
                    release.add(landed[i]);
                    landed[i] = null;
                }
            }
            if (reading != null) {
                release.add(reading);
                reading = null;
            }
            notifyAll();
        }
        release.forEach(RegisteredBuffer::release);
        recycler.closed(this);
    }

    /** The block's bytes, in order; one stream per block. */
    synchronized InputStream stream() {
        if (streamOpened) {
            throw new IllegalStateException(wanted.id + " is read in pieces: its stream can be opened once");
        }
        streamOpened = true;
        return new Stream();
    }

    /** Waits for piece {@code i} and takes it from the landed ones. */
    private RegisteredBuffer take(int i) throws IOException {
        long deadline = System.nanoTime() + waitNanos;
        synchronized (this) {
            while (true) {
                if (closed) {
                    throw new IOException(wanted.id + " was released while being read");
                }
                int slot = i % window;
                if (landed[slot] != null) {
                    reading = landed[slot];
                    readingLead = leads[slot];
                    landed[slot] = null;
                    nextToTake = i + 1;
                    return reading;
                }
                if (failure != null) {
                    throw new IOException("fetching " + wanted.id + " failed after " + (long) i * pieceBytes + " of its "
                            + length + " bytes: " + failure.getMessage(), failure);
                }
                if (Thread.currentThread().getName().startsWith("rdma-shuffle-poller")) {
                    // The piece can only land through this thread: waiting here would wait for itself.
                    throw new IOException(wanted.id + " is read in pieces: read its stream off the completion poller "
                            + "(a listener hands the block to another thread)");
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new IOException(wanted.id + ": piece " + i + " of " + pieces + " did not arrive within "
                            + waitNanos / 1_000_000 + " ms");
                }
                try {
                    wait(left / 1_000_000 + 1);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new java.io.InterruptedIOException("interrupted while reading " + wanted.id);
                }
            }
        }
    }

    /** The stream is done with {@code b}: it goes back to the fetcher, unless the block was released meanwhile. */
    private void done(RegisteredBuffer b) {
        synchronized (this) {
            if (reading != b) {
                return; // released by close()
            }
            reading = null;
        }
        recycler.recycle(this, b);
    }

    /** Reads the pieces in order, handing each buffer back (to read the next piece) once it is read. */
    private final class Stream extends InputStream {
        private int piece;
        private RegisteredBuffer current;
        private MemorySegment bytes;
        private long position;

        /** The current piece with bytes left, or null at the end of the block. */
        private MemorySegment ready() throws IOException {
            while (bytes == null || position == bytes.byteSize()) {
                if (current != null) {
                    RegisteredBuffer finished = current;
                    current = null;
                    bytes = null;
                    done(finished);
                }
                if (piece == pieces) {
                    return null;
                }
                long len = Math.min(pieceBytes, length - (long) piece * pieceBytes);
                int i = piece++;
                current = take(i);
                bytes = current.slabMemory().asSlice(current.offset() + readingLead, len); // set by take, on this thread
                position = 0;
            }
            return bytes;
        }

        @Override
        public int read() throws IOException {
            MemorySegment s = ready();
            return s == null ? -1 : s.get(ValueLayout.JAVA_BYTE, position++) & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            Objects.checkFromIndexSize(off, len, b.length);
            if (len == 0) {
                return 0;
            }
            MemorySegment s = ready();
            if (s == null) {
                return -1;
            }
            int n = (int) Math.min(len, s.byteSize() - position);
            MemorySegment.copy(s, ValueLayout.JAVA_BYTE, position, b, off, n);
            position += n;
            return n;
        }

        @Override
        public long skip(long n) throws IOException {
            long skipped = 0;
            while (skipped < n) {
                MemorySegment s = ready();
                if (s == null) {
                    break;
                }
                long k = Math.min(n - skipped, s.byteSize() - position);
                position += k;
                skipped += k;
            }
            return skipped;
        }

        @Override
        public int available() {
            return bytes == null ? 0 : (int) Math.min(Integer.MAX_VALUE, bytes.byteSize() - position);
        }

        @Override
        public void close() {
            // The piece being read goes back with the rest when the block is released.
        }
    }
}
