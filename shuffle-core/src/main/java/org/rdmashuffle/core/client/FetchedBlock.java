package org.rdmashuffle.core.client;

import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.Objects;

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
    private static final MemorySegment NOTHING = MemorySegment.ofArray(new byte[0]);
    private static final VarHandle RELEASED;

    static {
        try {
            RELEASED = MethodHandles.lookup().findVarHandle(FetchedBlock.class, "released", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final BlockId id;
    /** Where a contiguous block's bytes are: its first {@code size} bytes (null for an empty block). */
    private final RegisteredBuffer buffer;
    private final PiecedBlock pieced;
    private final long size;
    private final long rawLength;
    /** Set once, by {@link #release()}: a field, not an AtomicBoolean, as there is one of these per block. */
    private volatile boolean released;

    FetchedBlock(BlockId id, RegisteredBuffer buffer, long size, long rawLength) {
        this.id = id;
        this.buffer = buffer;
        this.pieced = null;
        this.size = size;
        this.rawLength = rawLength;
    }

    FetchedBlock(PiecedBlock pieced) {
        this.id = pieced.wanted.id;
        this.buffer = null;
        this.pieced = pieced;
        this.size = pieced.length;
        this.rawLength = pieced.rawLength;
    }

    static FetchedBlock empty(BlockId id) {
        return new FetchedBlock(id, null, 0, 0);
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
        return buffer == null ? NOTHING : buffer.segment(size);
    }

    /** A read-only view of the bytes (no copy); a contiguous block only. */
    public ByteBuffer asByteBuffer() {
        return data().asByteBuffer().asReadOnlyBuffer();
    }

    private void requireContiguous() {
        if (pieced != null) {
            throw new IllegalStateException(id + " (" + size + " bytes) was read in pieces: read it with openStream()");
        }
    }

    /** The bytes as a stream: in place for a contiguous block (any number of streams), in order as they arrive otherwise (one). */
    public InputStream openStream() {
        if (pieced != null) {
            return pieced.stream();
        }
        return buffer == null ? new SegmentStream(NOTHING, 0, 0) : new SegmentStream(buffer.slabMemory(), buffer.offset(), size);
    }

    public void release() {
        if (RELEASED.compareAndSet(this, false, true)) {
            if (buffer != null) {
                buffer.release();
            }
            if (pieced != null) {
                pieced.close();
            }
        }
    }

    /** Bytes {@code [from, end)} of a segment as a stream, read in place. */
    private static final class SegmentStream extends InputStream {
        private final MemorySegment data;
        private final long end;
        private long position;

        SegmentStream(MemorySegment data, long from, long length) {
            this.data = data;
            this.position = from;
            this.end = from + length;
        }

        @Override
        public int read() {
            return position < end ? data.get(ValueLayout.JAVA_BYTE, position++) & 0xff : -1;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            Objects.checkFromIndexSize(off, len, b.length);
            if (len == 0) {
                return 0;
            }
            long left = end - position;
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
            long k = Math.min(Math.max(n, 0), end - position);
            position += k;
            return k;
        }

        @Override
        public int available() {
            return (int) Math.min(Integer.MAX_VALUE, end - position);
        }
    }
}
