package org.rdmashuffle.core.client;

import org.rdmashuffle.core.buffer.RegisteredBuffer;

/**
 * One RDMA_READ's worth of a block: {@code length} bytes at {@code address} of the peer's region
 * {@code rkey} -- the whole block, or piece {@code piece} of a {@link PiecedBlock}. Its buffer is
 * taken when it is posted, or comes with it (a stream's piece reuses the buffer its consumer finished
 * with). Flat fields, not a descriptor: a block read from a cached layout allocates nothing else.
 * A whole block's read is reused by its fetcher once delivered ({@link #set}); a piece's is not.
 */
final class Read {
    Wanted wanted;
    long address;
    long length;
    int rkey;
    /** The block's size once decompressed, where the map side recorded it (MapReduce); else its length. */
    long rawLength;
    /** When the peer described it: the peer keeps the region registered for a lease from then. */
    long describedAt;
    /** When it entered the queue: past the fetch timeout there, it fails. */
    long queuedAt;
    final PiecedBlock pieced;
    final int piece;
    RegisteredBuffer buffer;

    Read(Wanted wanted, long address, long length, int rkey, long rawLength, long describedAt, long queuedAt) {
        this(wanted, address, length, rkey, rawLength, describedAt, queuedAt, null, -1, null);
    }

    /** Makes this (a whole block's read, delivered) the read of another whole block. */
    Read set(Wanted wanted, long address, long length, int rkey, long rawLength, long describedAt, long queuedAt) {
        this.wanted = wanted;
        this.address = address;
        this.length = length;
        this.rkey = rkey;
        this.rawLength = rawLength;
        this.describedAt = describedAt;
        this.queuedAt = queuedAt;
        this.buffer = null;
        return this;
    }

    Read(Wanted wanted, long address, long length, int rkey, long rawLength, long describedAt, long queuedAt,
         PiecedBlock pieced, int piece, RegisteredBuffer buffer) {
        set(wanted, address, length, rkey, rawLength, describedAt, queuedAt);
        this.pieced = pieced;
        this.piece = piece;
        this.buffer = buffer;
    }
}
