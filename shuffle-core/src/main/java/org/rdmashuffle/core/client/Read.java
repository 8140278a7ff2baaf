package org.rdmashuffle.core.client;

import org.rdmashuffle.core.buffer.RegisteredBuffer;

/**
 * One RDMA_READ's worth of a block: {@code length} bytes at {@code address} of the peer's region
 * {@code rkey} -- the whole block, or piece {@code piece} of a {@link PiecedBlock}. Its buffer is
 * taken when it is posted, or comes with it (a stream's piece reuses the buffer its consumer finished
 * with). Flat fields, not a descriptor: a block read from a cached layout allocates nothing else.
 */
final class Read {
    final Wanted wanted;
    final long address;
    final long length;
    final int rkey;
    /** The block's size once decompressed, where the map side recorded it (MapReduce); else its length. */
    final long rawLength;
    /** When the peer described it: the peer keeps the region registered for a lease from then. */
    final long describedAt;
    /** When it entered the queue: past the fetch timeout there, it fails. */
    final long queuedAt;
    final PiecedBlock pieced;
    final int piece;
    RegisteredBuffer buffer;

    Read(Wanted wanted, long address, long length, int rkey, long rawLength, long describedAt, long queuedAt) {
        this(wanted, address, length, rkey, rawLength, describedAt, queuedAt, null, -1, null);
    }

    Read(Wanted wanted, long address, long length, int rkey, long rawLength, long describedAt, long queuedAt,
         PiecedBlock pieced, int piece, RegisteredBuffer buffer) {
        this.wanted = wanted;
        this.address = address;
        this.length = length;
        this.rkey = rkey;
        this.rawLength = rawLength;
        this.describedAt = describedAt;
        this.queuedAt = queuedAt;
        this.pieced = pieced;
        this.piece = piece;
        this.buffer = buffer;
    }
}
