package org.rdmashuffle.spark;

import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;

import io.netty.buffer.Unpooled;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.rdmashuffle.core.client.FetchedBlock;

/**
 * A block fetched by RDMA, as Spark's fetch iterator takes it: reference-counted, the registered
 * memory handed back to the engine when the last reference goes. Starts with one reference (the
 * caller's, dropped after handing the buffer to Spark's listener, which takes its own).
 */
final class FetchedBlockManagedBuffer extends ManagedBuffer {
    private final FetchedBlock block;
    private final AtomicInteger references = new AtomicInteger(1);

    FetchedBlockManagedBuffer(FetchedBlock block) {
        this.block = block;
    }

    @Override
    public long size() {
        return block.size();
    }

    @Override
    public ByteBuffer nioByteBuffer() {
        return block.asByteBuffer();
    }

    @Override
    public InputStream createInputStream() {
        ByteBuffer b = block.asByteBuffer();
        return new InputStream() {
            @Override
            public int read() {
                return b.hasRemaining() ? b.get() & 0xFF : -1;
            }

            @Override
            public int read(byte[] into, int off, int len) {
                if (len == 0) {
                    return 0;
                }
                if (!b.hasRemaining()) {
                    return -1;
                }
                int n = Math.min(len, b.remaining());
                b.get(into, off, n);
                return n;
            }

            @Override
            public long skip(long n) {
                int k = (int) Math.min(Math.max(n, 0), b.remaining());
                b.position(b.position() + k);
                return k;
            }

            @Override
            public int available() {
                return b.remaining();
            }
        };
    }

    @Override
    public ManagedBuffer retain() {
        if (references.getAndIncrement() <= 0) {
            references.decrementAndGet();
            throw new IllegalStateException("retain of a released RDMA block buffer");
        }
        return this;
    }

    @Override
    public ManagedBuffer release() {
        int left = references.decrementAndGet();
        if (left == 0) {
            block.release();
        } else if (left < 0) {
            throw new IllegalStateException("RDMA block buffer released more often than retained");
        }
        return this;
    }

    @Override
    public Object convertToNetty() {
        return Unpooled.wrappedBuffer(block.asByteBuffer());
    }

    @Override
    public Object convertToNettyForSsl() {
        return convertToNetty();
    }

    @Override
    public String toString() {
        return "FetchedBlockManagedBuffer[" + block.id() + ", " + block.size() + " bytes]";
    }
}
