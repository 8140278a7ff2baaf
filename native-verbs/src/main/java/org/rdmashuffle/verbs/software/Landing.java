package org.rdmashuffle.verbs.software;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.Arrays;

/**
 * Where a frame's payload goes while its bytes arrive, over as many reads as the socket needs: a
 * list of target ranges filled in order (none: the bytes are skipped), the QP whose memory they are
 * (checked before every copy: once it failed the rest is skipped), and what to do when all arrived.
 * A link has one, reused for every frame (frames arrive one after another), so landing a read answer
 * allocates nothing.
 */
final class Landing {
    /** Whether the memory being landed in may still be written (a QP's: not once it failed). */
    @FunctionalInterface
    interface Guard {
        boolean acceptsData();
    }

    /** What follows the payload: {@link #landed} when all of it is in place, {@link #dropped} when its QP failed first. */
    interface Done {
        void landed() throws IOException;

        default void dropped() throws IOException {
        }
    }

    private MemorySegment[] segments = new MemorySegment[4];
    private long[] offsets = new long[4];
    private long[] lengths = new long[4];
    private int count;
    /** The target being filled, and how much of it is. */
    private int index;
    private long within;
    /** Payload bytes still to come. */
    long left;
    /** The owner of the targets, asked before every copy (null: memory of nobody's, e.g. a token). */
    Guard guard;
    private Done done;
    private boolean dropped;
    /** The last segment read into straight from the socket, and a view of all of it (reused while it is the target). */
    private MemorySegment viewed;
    private ByteBuffer view;

    /** The next {@code n} bytes are skipped. */
    Landing skip(long n) {
        return into(null, null).expect(n);
    }

    /** Lands into the ranges {@link #add}ed next, for {@code guard}'s memory; then {@code done}. */
    Landing into(Guard guard, Done done) {
        Arrays.fill(segments, 0, count, null);
        count = 0;
        index = 0;
        within = 0;
        left = 0;
        dropped = false;
        this.guard = guard;
        this.done = done;
        return this;
    }

    Landing add(MemorySegment segment, long offset, long length) {
        if (length == 0) {
            return this;
        }
        if (count == segments.length) {
            segments = Arrays.copyOf(segments, count * 2);
            offsets = Arrays.copyOf(offsets, count * 2);
            lengths = Arrays.copyOf(lengths, count * 2);
        }
        segments[count] = segment;
        offsets[count] = offset;
        lengths[count] = length;
        count++;
        left += length;
        return this;
    }

    /** For a skip: how many bytes. */
    private Landing expect(long n) {
        left = n;
        return this;
    }

    /** Whether the bytes still to come are skipped (no targets, or the QP failed meanwhile). */
    boolean skipping() {
        return count == 0 || dropped;
    }

    /** The QP failed: the rest is skipped and {@link Done#dropped} runs at the end. */
    void drop() {
        dropped = true;
    }

    /** Copies the next {@code n} payload bytes from {@code src} at {@code at} into place. */
    void copyFrom(MemorySegment src, long at, int n) {
        long from = at;
        long rest = n;
        while (rest > 0) {
            long k = Math.min(rest, lengths[index] - within);
            MemorySegment.copy(src, from, segments[index], offsets[index] + within, k);
            advance(k);
            from += k;
            rest -= k;
        }
    }

    /** Reads what the socket has of the payload (at most what is left) straight into place; -1 at its end. */
    long readFrom(SocketChannel channel) throws IOException {
        if (count - index == 1 && segments[index].byteSize() <= Integer.MAX_VALUE) {
            // The usual case (one target, e.g. a read answer into one buffer): a view of the whole
            // segment, kept across frames, instead of new views for each of a large payload's reads.
            ByteBuffer v = viewOf(segments[index]);
            v.clear().position((int) (offsets[index] + within)).limit((int) (offsets[index] + lengths[index]));
            int n = channel.read(v);
            if (n > 0) {
                advance(n);
            }
            return n;
        }
        ByteBuffer[] views = new ByteBuffer[count - index];
        for (int i = index; i < count; i++) {
            long skip = i == index ? within : 0;
            views[i - index] = segments[i].asSlice(offsets[i] + skip, lengths[i] - skip).asByteBuffer();
        }
        long n = channel.read(views);
        if (n > 0) {
            advance(n);
        }
        return n;
    }

    private ByteBuffer viewOf(MemorySegment segment) {
        if (segment != viewed) {
            view = segment.asByteBuffer();
            viewed = segment;
        }
        return view;
    }

    private void advance(long n) {
        left -= n;
        long rest = n;
        while (rest > 0) {
            long k = Math.min(rest, lengths[index] - within);
            within += k;
            rest -= k;
            if (within == lengths[index]) {
                index++;
                within = 0;
            }
        }
    }

    /** Runs what follows the payload, once it all arrived or was skipped. */
    void finish() throws IOException {
        Done d = done;
        boolean wasDropped = dropped;
        into(null, null);
        if (d != null) {
            if (wasDropped) {
                d.dropped();
            } else {
                d.landed();
            }
        }
    }
}
