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
    /**
     * Bytes before {@code address} the read takes as well, so that it starts on a page boundary of the
     * peer's region and of its buffer, the block landing this far into the buffer: set when it is
     * posted, where reads are page-aligned ({@link PeerFetcher.Limits#pageAlignedReads}); else 0.
     */
    int lead;
    final PiecedBlock pieced;
    final int piece;
    RegisteredBuffer buffer;
    /** The output of a held answer it reads, released once none of its reads is left ({@link HeldOutputs}); else null. */
    HeldOutputs.Output hold;

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
        this.lead = 0;
        this.hold = null;
        return this;
    }

    /** Bytes the read takes: its lead, then the block's (or piece's) own. */
    long span() {
        return lead + length;
    }

    /** Sets {@link #lead} for reads from page boundaries ({@code pageAligned}), else 0; returns the span. */
    long align(boolean pageAligned) {
        lead = pageAligned ? (int) (address & (org.rdmashuffle.core.transport.MemoryRegistration.PAGE - 1)) : 0;
        return span();
    }

    Read(Wanted wanted, long address, long length, int rkey, long rawLength, long describedAt, long queuedAt,
         PiecedBlock pieced, int piece, RegisteredBuffer buffer) {
        set(wanted, address, length, rkey, rawLength, describedAt, queuedAt);
        this.pieced = pieced;
        this.piece = piece;
        this.buffer = buffer;
    }
}
