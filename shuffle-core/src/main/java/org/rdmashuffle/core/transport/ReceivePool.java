package org.rdmashuffle.core.transport;

import java.lang.foreign.MemorySegment;

import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.ReceiveWorkRequests;
import org.rdmashuffle.verbs.SharedReceiveQueue;

/**
 * The registered receive buffers behind a shared receive queue: one memory region cut into
 * {@code buffers} slots of {@code bufferBytes}, all posted at start. A consumed slot (its wr_id is
 * its index) is read with {@link #buffer(long, int)} and handed back with {@link #repost(long)};
 * reposts are posted in batches, and at once when fewer than the low-water mark remain posted, so
 * the SRQ never runs dry while slots sit waiting in a batch. Not thread-safe: owned by the thread
 * that polls the receive CQ.
 */
public final class ReceivePool implements AutoCloseable {
    private final SharedReceiveQueue srq;
    private final int buffers;
    private final int bufferBytes;
    /** Bytes from one slot's start to the next: {@code bufferBytes}, or whole pages where every transfer starts on one. */
    private final long stride;
    private final int lowWater;
    private final long idBase;
    private final MemoryRegion region;
    private final ReceiveWorkRequests batch;
    private int batched;
    private int posted;

    /**
     * @param lowWater post pending reposts at once when fewer than this many receives remain posted
     * @param batchSize reposts gathered into one post
     */
    public ReceivePool(ProtectionDomain pd, SharedReceiveQueue srq, int buffers, int bufferBytes, int lowWater, int batchSize) {
        this(pd, srq, buffers, bufferBytes, lowWater, batchSize, 0, MemoryRegistration.PINNED);
    }

    /**
     * @param idBase added to every slot's index to make its wr_id (a tenant's receives carry its index)
     * @param registration pinned or on demand
     */
    public ReceivePool(ProtectionDomain pd, SharedReceiveQueue srq, int buffers, int bufferBytes, int lowWater, int batchSize,
                       long idBase, MemoryRegistration registration) {
        if (buffers < 1 || bufferBytes < 1 || batchSize < 1 || lowWater < 0 || lowWater > buffers) {
            throw new IllegalArgumentException("receive pool of " + buffers + " x " + bufferBytes + " B, low water "
                    + lowWater + ", batch " + batchSize);
        }
        this.srq = srq;
        this.buffers = buffers;
        this.bufferBytes = bufferBytes;
        this.stride = registration.pageAlignedReads() ? MemoryRegistration.roundUpToPage(bufferBytes) : bufferBytes;
        this.lowWater = lowWater;
        this.idBase = idBase;
        this.region = pd.allocateAndRegister(buffers * stride, registration.access(Access.LOCAL_WRITE));
        this.batch = ReceiveWorkRequests.allocate(Math.min(batchSize, buffers), 1);
        try {
            for (int i = 0; i < buffers; i++) {
                repost(idBase + i);
            }
            flush();
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** The {@code length} received bytes of slot {@code wrId}; refuses a slot or length the pool never gave. */
    public MemorySegment buffer(long wrId, int length) {
        int slot = slot(wrId);
        if (length < 0 || length > bufferBytes) {
            throw new IllegalArgumentException("received length " + length + " in a " + bufferBytes + "-byte receive buffer");
        }
        return region.segment().asSlice(slot * stride, length);
    }

    /** Hands slot {@code wrId} back: it is posted with the next batch (or now, below the low-water mark). */
    public void repost(long wrId) {
        int slot = slot(wrId);
        batch.set(batched++, idBase + slot, region, slot * stride, bufferBytes);
        if (batched == batch.capacity() || posted < lowWater) {
            flush();
        }
    }

    /** Records that the provider consumed one posted receive (call once per receive completion). */
    public void consumed() {
        posted--;
    }

    /** Posts every gathered repost. */
    public void flush() {
        if (batched > 0) {
            srq.postReceive(batch, batched);
            posted += batched;
            batched = 0;
        }
    }

    /** Receives posted to the SRQ now. */
    public int posted() {
        return posted;
    }

    /** Slots consumed and handed back but not yet posted. */
    public int pendingReposts() {
        return batched;
    }

    public int bufferBytes() {
        return bufferBytes;
    }

    private int slot(long wrId) {
        long slot = wrId - idBase;
        if (slot < 0 || slot >= buffers) {
            throw new IllegalArgumentException("wr_id " + wrId + " is not a slot of this receive pool (" + idBase + ".."
                    + (idBase + buffers - 1) + ")");
        }
        return (int) slot;
    }

    @Override
    public void close() {
        CloseSteps steps = new CloseSteps();
        steps.attempt(batch::close);
        steps.attempt(region::close);
        steps.rethrow();
    }
}
