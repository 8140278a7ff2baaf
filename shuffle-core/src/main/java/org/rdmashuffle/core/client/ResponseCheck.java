package org.rdmashuffle.core.client;

import java.util.List;

import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.protocol.MalformedMessageException;
import org.rdmashuffle.core.protocol.BlockDescriptor;
import org.rdmashuffle.core.protocol.MapOutputLayout;

/**
 * What a reducer believes of a peer's answer before it reads a byte: each descriptor names the block
 * asked for in its place and a range that can exist, and a layout is kept only if it agrees with the
 * descriptors of its blocks. A peer that answers otherwise is broken or hostile; its connection fails.
 * A block described longer than a reducer reads ({@link #tooLong}) fails alone, the rest of the answer
 * is read.
 */
final class ResponseCheck {
    /**
     * The most pieces a block is read in ({@link PiecedBlock} counts them in an int): with pieces of a
     * fetch buffer (at least 1 MiB less a page), a block of about 2 PiB; 8 PiB with the default 4 MiB
     * buffers. Nothing is sized by a block's length; this bounds only what a counter holds.
     */
    static final int MAX_PIECES = Integer.MAX_VALUE - 16;

    private ResponseCheck() {
    }

    /**
     * What is wrong with response {@code r} to a request for {@code asked} (in order: as many, or for a
     * held answer the first of them), or null.
     */
    static Throwable descriptors(Message.FetchResponse r, List<Wanted> asked) {
        for (int i = 0; i < r.blocks().size(); i++) {
            Throwable wrong = descriptor(r, asked.get(i), r.blocks().get(i));
            if (wrong != null) {
                return wrong;
            }
        }
        return null;
    }

    /** What is wrong with {@code d}, given for {@code w} in response {@code r}, or null. */
    static Throwable descriptor(Message.FetchResponse r, Wanted w, BlockDescriptor d) {
        BlockId id = w.id; // compared field by field: no BlockId per described block
        if (d.shuffleId() != id.shuffleId() || d.mapId() != id.mapId() || d.startPartition() != id.startPartition()
                || d.endPartition() != id.endPartition()) {
            return new MalformedMessageException("response " + r.requestId() + " describes " + d.blockId() + " where "
                    + w.id + " was asked");
        }
        // Addresses are unsigned: a range that wraps past the top of the address space cannot exist.
        if (d.length() < 0 || !d.isEmpty() && (d.address() == 0
                || Long.compareUnsigned(d.address() + d.length(), d.address()) < 0)) {
            return new MalformedMessageException("response " + r.requestId() + ": impossible range for " + w.id + ": "
                    + d.length() + " bytes at 0x" + Long.toHexString(d.address()));
        }
        return null;
    }

    /**
     * Whether layout {@code l} is of an output asked for and says of every block asked from it what
     * its descriptor in {@code r} says (length, and for a non-empty block address and rkey). One that
     * does not is dropped: the blocks read from it later would come from somewhere else.
     */
    static boolean agrees(MapOutputLayout l, List<Wanted> asked, Message.FetchResponse r) {
        boolean any = false;
        for (int i = 0; i < asked.size(); i++) {
            BlockId b = asked.get(i).id;
            if (b.shuffleId() == l.shuffleId() && b.mapId() == l.mapId()) {
                BlockDescriptor d = l.describe(b);
                BlockDescriptor got = r.blocks().get(i);
                if (d == null || d.length() != got.length() || !d.isEmpty() && (d.address() != got.address()
                        || d.rkey() != got.rkey())) {
                    return false;
                }
                any = true;
            }
        }
        return any;
    }

    /** The longest block read in pieces of {@code pieceBytes}: {@link #MAX_PIECES} of them. */
    static long longestBlock(int pieceBytes) {
        return (long) MAX_PIECES * pieceBytes;
    }

    /** Whether a block of {@code length} bytes is longer than one read in pieces of {@code pieceBytes} can be. */
    static boolean tooLong(long length, int pieceBytes) {
        return length > longestBlock(pieceBytes);
    }

    /**
     * Why the block {@code d} describes for {@code w} in response {@code r} is not read: longer than
     * any block can be ({@link #longestBlock}), naming the block, the length claimed and the limit; null
     * if it is read. Only that block fails: the peer's other answers may be right.
     */
    static String tooLong(Message.FetchResponse r, Wanted w, BlockDescriptor d, int pieceBytes) {
        if (!tooLong(d.length(), pieceBytes)) {
            return null;
        }
        return "response " + r.requestId() + " describes " + w.id + " as " + d.length() + " bytes, longer than a block can be ("
                + longestBlock(pieceBytes) + " bytes: " + MAX_PIECES + " pieces of " + pieceBytes + ")";
    }
}
