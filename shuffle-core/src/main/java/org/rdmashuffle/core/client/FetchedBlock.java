package org.rdmashuffle.core.client;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicBoolean;

import org.rdmashuffle.core.BlockId;
import org.rdmashuffle.core.buffer.RegisteredBuffer;

/**
 * A block's bytes, read by RDMA into registered memory. Valid until {@link #release()}, which hands
 * the memory back to the engine (idempotent; reading after it is a bug).
 */
public final class FetchedBlock {
    private final BlockId id;
    private final MemorySegment data;
    private final RegisteredBuffer buffer;
    private final long rawLength;
    private final AtomicBoolean released = new AtomicBoolean();

    FetchedBlock(BlockId id, MemorySegment data, RegisteredBuffer buffer, long rawLength) {
        this.id = id;
        this.data = data;
        this.buffer = buffer;
        this.rawLength = rawLength;
    }

    static FetchedBlock empty(BlockId id) {
        return new FetchedBlock(id, MemorySegment.ofArray(new byte[0]), null, 0);
    }

    public BlockId id() {
        return id;
    }

    public long size() {
        return data.byteSize();
    }

    /**
     * The size once decompressed, as the serving side described it: MapReduce's index records it;
     * for Spark's outputs it equals {@link #size()}.
     */
    public long rawLength() {
        return rawLength;
    }

    /** The bytes, in place (no copy). */
    public MemorySegment data() {
        return data;
    }

    /** A read-only view of the bytes (no copy); blocks over 2 GiB cannot be viewed so. */
    public ByteBuffer asByteBuffer() {
        return data.asByteBuffer().asReadOnlyBuffer();
    }

    public void release() {
        if (released.compareAndSet(false, true) && buffer != null) {
            buffer.release();
        }
    }
}
