package org.rdmashuffle.verbs.software;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/** A posted receive: its wr_id and the registered memory its SGEs name, checked at post time. */
record Receive(long wrId, MemorySegment[] sges, long capacity) {

    ByteBuffer[] buffers(long length) {
        ByteBuffer[] out = new ByteBuffer[sges.length];
        long left = length;
        int n = 0;
        for (MemorySegment s : sges) {
            if (left == 0) {
                break;
            }
            long take = Math.min(left, s.byteSize());
            out[n++] = s.asSlice(0, take).asByteBuffer();
            left -= take;
        }
        return java.util.Arrays.copyOf(out, n);
    }
}
