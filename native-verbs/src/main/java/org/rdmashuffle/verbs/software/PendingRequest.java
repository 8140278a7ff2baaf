package org.rdmashuffle.verbs.software;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * A posted send-queue request awaiting its response, with its frame. Reused by its QP once answered
 * (a QP posts up to max_send_wr at once, so it makes no more than that many): a read posted and
 * answered allocates nothing here.
 */
final class PendingRequest {
    /**
     * Answers up to this size are copied through the reader's buffer (no ByteBuffer views to make);
     * larger ones are read straight into place, where a copy would cost more than the views.
     */
    static final int COPY_AT_MOST = FrameReader.CAPACITY;

    final Frame request = new Frame();
    long sequence;
    long wrId;
    int opcode;
    boolean signaled;
    int length;
    int localError;
    /** Where a READ's or an atomic's answer lands: SGE s is {@code lengths[s]} bytes at {@code offsets[s]} of {@code regions[s]}. */
    private final SoftMemoryRegion[] regions;
    private final long[] offsets;
    private final int[] lengths;
    private int sges;

    PendingRequest(int maxSge) {
        int n = Math.max(1, maxSge);
        regions = new SoftMemoryRegion[n];
        offsets = new long[n];
        lengths = new int[n];
    }

    /** Ready for another request: no destination, no error. */
    PendingRequest clear() {
        Arrays.fill(regions, 0, sges, null);
        sges = 0;
        localError = 0;
        return this;
    }

    void addDestination(SoftMemoryRegion mr, long offset, int bytes) {
        regions[sges] = mr;
        offsets[sges] = offset;
        lengths[sges] = bytes;
        sges++;
    }

    int destinations() {
        return sges;
    }

    int destinationLength(int s) {
        return lengths[s];
    }

    /**
     * Reads a read response's {@link #length} bytes from {@code in} into the destination: up to {@link
     * #COPY_AT_MOST} copied from the reader's buffer (no allocation: small blocks are the common case),
     * larger ones what is buffered copied and the rest read straight into the registered memory.
     */
    void land(FrameReader in) throws IOException {
        if (length <= COPY_AT_MOST) {
            for (int s = 0; s < sges; s++) {
                in.copyTo(regions[s].segment(), offsets[s], lengths[s]);
            }
            return;
        }
        ByteBuffer[] into = new ByteBuffer[sges];
        for (int s = 0; s < sges; s++) {
            into[s] = regions[s].segment().asSlice(offsets[s], lengths[s]).asByteBuffer();
        }
        in.readInto(into, length);
    }

    /** Writes an atomic's old value to its (one, 8-byte) destination. */
    void landAtomic(long value) {
        regions[0].segment().set(ValueLayout.JAVA_LONG_UNALIGNED, offsets[0], value);
    }
}
