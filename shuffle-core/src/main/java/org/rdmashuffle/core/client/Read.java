package org.rdmashuffle.core.client;

import org.rdmashuffle.core.buffer.RegisteredBuffer;
import org.rdmashuffle.core.server.BlockDescriptor;

/**
 * One RDMA_READ's worth of a block: the whole block, or piece {@code piece} of a {@link PiecedBlock}
 * (then {@code where} is that piece's range). Its buffer is taken when it is posted, or comes with it
 * (a stream's piece reuses the buffer its consumer finished with).
 */
final class Read {
    final Wanted wanted;
    final BlockDescriptor where;
    /** When the peer described it: the peer keeps the region registered for a lease from then. */
    final long describedAt;
    /** When it entered the queue: past the fetch timeout there, it fails. */
    final long queuedAt;
    final PiecedBlock pieced;
    final int piece;
    RegisteredBuffer buffer;

    Read(Wanted wanted, BlockDescriptor where, long describedAt, long queuedAt) {
        this(wanted, where, describedAt, queuedAt, null, -1, null);
    }

    Read(Wanted wanted, BlockDescriptor where, long describedAt, long queuedAt, PiecedBlock pieced, int piece,
         RegisteredBuffer buffer) {
        this.wanted = wanted;
        this.where = where;
        this.describedAt = describedAt;
        this.queuedAt = queuedAt;
        this.pieced = pieced;
        this.piece = piece;
        this.buffer = buffer;
    }

    long length() {
        return where.length();
    }
}
