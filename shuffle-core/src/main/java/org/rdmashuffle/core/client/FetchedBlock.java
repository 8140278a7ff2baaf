package org.rdmashuffle.core.client;

import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.Objects;

import org.rdmashuffle.core.protocol.BlockId;
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
    /**
     * Where the bytes are: a contiguous block's {@link RegisteredBuffer} (its first {@code size}
     * bytes), a {@link PiecedBlock}, or null for an empty block. One field for both: one of these
     * is made per block, and a field less is 8 bytes less.
     */
    private final Object source;
    private final long size;
    /** Where a contiguous block's bytes start in its buffer: its read's lead ({@code Read#lead}), 0 unless reads are page-aligned. */
    private final int lead;
    private final long rawLength;
    /** Set once, by {@link #release()}: a field, not an AtomicBoolean, as there is one of these per block. */
    private volatile boolean released;

    FetchedBlock(BlockId id, RegisteredBuffer buffer, int lead, long size, long rawLength) {
        this.id = id;
        this.source = buffer;
        this.lead = lead;
        this.size = size;
        this.rawLength = rawLength;
    }

    FetchedBlock(PiecedBlock pieced) {
        this.id = pieced.wanted.id;
        this.source = pieced;
        this.lead = 0;
        this.size = pieced.length;
        this.rawLength = pieced.rawLength;
    }

    static FetchedBlock empty(BlockId id) {
        return new FetchedBlock(id, null, 0, 0, 0);
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
        return !(source instanceof PiecedBlock);
    }

    /** The bytes, in place (no copy); a contiguous block only. */
    public MemorySegment data() {
        requireContiguous();
        return source instanceof RegisteredBuffer b ? b.slabMemory().asSlice(b.offset() + lead, size) : NOTHING;
    }

    /** A read-only view of the bytes (no copy); a contiguous block only. */
    public ByteBuffer asByteBuffer() {
        return data().asByteBuffer().asReadOnlyBuffer();
    }

    private void requireContiguous() {
        if (source instanceof PiecedBlock) {
            throw new IllegalStateException(id + " (" + size + " bytes) was read in pieces: read it with openStream()");
        }
    }

    /** The bytes as a stream: in place for a contiguous block (any number of streams), in order as they arrive otherwise (one). */
    public InputStream openStream() {
        if (source instanceof PiecedBlock p) {
            return p.stream();
        }
        return new SegmentStream();
    }

    public void release() {
        if (RELEASED.compareAndSet(this, false, true)) {
            if (source instanceof RegisteredBuffer b) {
                b.release();
            } else if (source instanceof PiecedBlock p) {
                p.close();
            }
        }
    }

    /**
     * A contiguous block's bytes as a stream, read in place from its slab. An inner class with one
     * field of its own (where it is): 24 bytes per stream.
     */
    private final class SegmentStream extends InputStream {
        private long position;

        private MemorySegment data() {
            return source instanceof RegisteredBuffer b ? b.slabMemory() : NOTHING;
        }

        private long start() {
            return source instanceof RegisteredBuffer b ? b.offset() + lead : 0;
        }

        private long left() {
            return size - position;
        }

        @Override
        public int read() {
            return position < size ? data().get(ValueLayout.JAVA_BYTE, start() + position++) & 0xff : -1;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            Objects.checkFromIndexSize(off, len, b.length);
            if (len == 0) {
                return 0;
            }
            long left = left();
            if (left <= 0) {
                return -1;
            }
            int n = (int) Math.min(len, left);
            MemorySegment.copy(data(), ValueLayout.JAVA_BYTE, start() + position, b, off, n);
            position += n;
            return n;
        }

        @Override
        public long skip(long n) {
            long k = Math.min(Math.max(n, 0), left());
            position += k;
            return k;
        }

        @Override
        public int available() {
            return (int) Math.min(Integer.MAX_VALUE, left());
        }
    }
}
