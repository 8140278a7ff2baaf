package org.rdmashuffle.core.client;

import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

import org.rdmashuffle.core.BlockId;
import org.rdmashuffle.core.buffer.RegisteredBuffer;

/**
 * A block's bytes, read by RDMA into registered memory. Valid until {@link #release()}, which hands
 * the memory back to the engine (idempotent; reading after it is a bug).
 *
 * <p>A block that fits one fetch buffer is {@linkplain #isContiguous() contiguous}: its bytes are in
 * place in {@link #data()}. A larger one is read in pieces and arrives while it is still being read:
 * {@link #openStream()} reads it (once) in order, waiting for pieces still on the way, and fails with
 * an {@code IOException} naming the block if the fetch breaks. {@link #openStream()} serves both.
 */
public final class FetchedBlock {
    private final BlockId id;
    private final MemorySegment data;
    private final RegisteredBuffer buffer;
    private final PiecedBlock pieced;
    private final long size;
    private final long rawLength;
    private final AtomicBoolean released = new AtomicBoolean();

    FetchedBlock(BlockId id, MemorySegment data, RegisteredBuffer buffer, long rawLength) {
        this.id = id;
        this.data = data;
        this.buffer = buffer;
        this.pieced = null;
        this.size = data.byteSize();
        this.rawLength = rawLength;
    }

    FetchedBlock(PiecedBlock pieced) {
        this.id = pieced.wanted.id;
        this.data = null;
        this.buffer = null;
        this.pieced = pieced;
        this.size = pieced.length;
        this.rawLength = pieced.rawLength;
    }

    static FetchedBlock empty(BlockId id) {
        return new FetchedBlock(id, MemorySegment.ofArray(new byte[0]), null, 0);
    }

    public BlockId id() {
        return id;
    }

    public long size() {
        return size;
    }

    /**
     * The size once decompressed, as the serving side described it: MapReduce's index records it;
     * for Spark's outputs it equals {@link #size()}.
     */
    public long rawLength() {
        return rawLength;
    }

    /** Whether the bytes sit in one buffer ({@link #data()}); otherwise they are read with {@link #openStream()}. */
    public boolean isContiguous() {
        return pieced == null;
    }

    /** The bytes, in place (no copy); a contiguous block only. */
    public MemorySegment data() {
        requireContiguous();
        return data;
    }

    /** A read-only view of the bytes (no copy); a contiguous block only. */
    public ByteBuffer asByteBuffer() {
        requireContiguous();
        return data.asByteBuffer().asReadOnlyBuffer();
    }

    private void requireContiguous() {
        if (pieced != null) {
            throw new IllegalStateException(id + " (" + size + " bytes) was read in pieces: read it with openStream()");
        }
    }

    /** The bytes as a stream: in place for a contiguous block (any number of streams), in order as they arrive otherwise (one). */
    public InputStream openStream() {
        return pieced != null ? pieced.stream() : new SegmentStream(data);
    }

    public void release() {
        if (released.compareAndSet(false, true)) {
            if (buffer != null) {
                buffer.release();
            }
            if (pieced != null) {
                pieced.close();
            }
        }
    }

    /** A segment's bytes as a stream, read in place. */
    private static final class SegmentStream extends InputStream {
        private final MemorySegment data;
        private long position;

        SegmentStream(MemorySegment data) {
            this.data = data;
        }

        @Override
        public int read() {
            return position < data.byteSize() ? data.get(ValueLayout.JAVA_BYTE, position++) & 0xff : -1;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            Objects.checkFromIndexSize(off, len, b.length);
            if (len == 0) {
                return 0;
            }
            long left = data.byteSize() - position;
            if (left <= 0) {
                return -1;
            }
            int n = (int) Math.min(len, left);
            MemorySegment.copy(data, ValueLayout.JAVA_BYTE, position, b, off, n);
            position += n;
            return n;
        }

        @Override
        public long skip(long n) {
            long k = Math.min(Math.max(n, 0), data.byteSize() - position);
            position += k;
            return k;
        }

        @Override
        public int available() {
            return (int) Math.min(Integer.MAX_VALUE, data.byteSize() - position);
        }
    }
}
