package org.rdmashuffle.verbs.software;

import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * A posted send-queue request awaiting its response, with its frame. Reused by its QP once answered
 * (a QP posts up to max_send_wr at once, so it makes no more than that many): a read posted and
 * answered allocates nothing here.
 */
final class PendingRequest {
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

    /** Adds the destination's ranges, in order, to where a read response lands. */
    Landing addDestinationsTo(Landing l) {
        for (int s = 0; s < sges; s++) {
            l.add(regions[s].segment(), offsets[s], lengths[s]);
        }
        return l;
    }

    /** Writes an atomic's old value to its (one, 8-byte) destination. */
    void landAtomic(long value) {
        regions[0].segment().set(ValueLayout.JAVA_LONG_UNALIGNED, offsets[0], value);
    }
}
