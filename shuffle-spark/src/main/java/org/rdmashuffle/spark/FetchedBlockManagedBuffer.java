package org.rdmashuffle.spark;

import java.io.IOException;
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
    /** The most bytes {@link #nioByteBuffer} copies into one array (a JVM's arrays stop a little short of 2^31). */
    static final long MAX_ONE_BUFFER = Integer.MAX_VALUE - 16;

    private final FetchedBlock block;
    private final AtomicInteger references = new AtomicInteger(1);

    FetchedBlockManagedBuffer(FetchedBlock block) {
        this.block = block;
    }

    @Override
    public long size() {
        return block.size();
    }

    /**
     * The bytes as one buffer: in place for a block that fits one fetch buffer; a block read in pieces
     * is copied (Spark's fetch iterator reads shuffle blocks as streams, so this is a rare path), and
     * one over 2 GiB cannot be held so. The copy grows as the pieces arrive: its size is the serving
     * peer's word until they have, so nothing is allocated for bytes that have not come.
     */
    @Override
    public ByteBuffer nioByteBuffer() throws IOException {
        if (block.isContiguous()) {
            return block.asByteBuffer();
        }
        if (block.size() > MAX_ONE_BUFFER) {
            throw new IOException(block.id() + " is " + block.size() + " bytes, more than one ByteBuffer holds (" + MAX_ONE_BUFFER
                    + "): read it as a stream (createInputStream)");
        }
        byte[] all;
        try (InputStream in = block.openStream()) {
            all = in.readNBytes((int) block.size()); // in chunks as they are read, not one array of the size claimed
        }
        if (all.length != block.size()) {
            throw new IOException(block.id() + " ended after " + all.length + " of its " + block.size() + " bytes");
        }
        return ByteBuffer.wrap(all).asReadOnlyBuffer();
    }

    /** The bytes as a stream, read in place (and, for a block read in pieces, as the pieces arrive). */
    @Override
    public InputStream createInputStream() {
        return block.openStream();
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
    public Object convertToNetty() throws IOException {
        return Unpooled.wrappedBuffer(nioByteBuffer());
    }

    @Override
    public Object convertToNettyForSsl() throws IOException {
        return convertToNetty();
    }

    @Override
    public String toString() {
        return "FetchedBlockManagedBuffer[" + block.id() + ", " + block.size() + " bytes]";
    }
}
