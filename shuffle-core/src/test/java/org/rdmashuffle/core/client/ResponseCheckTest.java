package org.rdmashuffle.core.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.protocol.BlockDescriptor;
import org.rdmashuffle.core.protocol.MapOutputLayout;

/**
 * A peer's answer is checked before anything is read from it: descriptors must name the blocks asked,
 * in order, with ranges that can exist; a layout is cached only if it says of each block asked what
 * the block's descriptor says. A layout that disagrees would send later reads (with no request, so no
 * descriptor to compare) to other bytes.
 */
class ResponseCheckTest {
    private static final long BASE = 0x7f00_0000_0000L;
    private static final int RKEY = 0x1234;
    /** Map 5 of shuffle 3: partitions of 100, 0 and 300 bytes. */
    private static final MapOutputLayout LAYOUT = new MapOutputLayout(3, 5, BASE, RKEY, new long[] {0, 100, 100, 400});

    private static List<Wanted> asked(BlockId... ids) {
        return java.util.Arrays.stream(ids).map(b -> new Wanted(b, null)).toList();
    }

    private static BlockDescriptor described(int partition, long address, long length, int rkey) {
        return new BlockDescriptor(3, 5, partition, partition + 1, address, length, rkey);
    }

    private static Message.FetchResponse answer(List<BlockDescriptor> blocks, MapOutputLayout... layouts) {
        return new Message.FetchResponse(1, blocks, List.of(layouts));
    }

    @Test
    void aLayoutThatAgreesWithEveryDescriptorIsKept() {
        var r = answer(List.of(described(0, BASE, 100, RKEY), described(1, 0, 0, 0), described(2, BASE + 100, 300, RKEY)), LAYOUT);
        assertTrue(ResponseCheck.agrees(LAYOUT, asked(BlockId.of(3, 5, 0), BlockId.of(3, 5, 1), BlockId.of(3, 5, 2)), r));
    }

    @Test
    void aLayoutWhoseOffsetsDisagreeWithADescriptorIsDropped() {
        // The descriptor puts partition 2 at +104; the layout says +100: later reads from it would be shifted.
        var r = answer(List.of(described(2, BASE + 104, 300, RKEY)), LAYOUT);
        assertFalse(ResponseCheck.agrees(LAYOUT, asked(BlockId.of(3, 5, 2)), r));
    }

    @Test
    void aLayoutWithAnotherRkeyOrLengthIsDropped() {
        assertFalse(ResponseCheck.agrees(LAYOUT, asked(BlockId.of(3, 5, 0)), answer(List.of(described(0, BASE, 100, RKEY + 1)))));
        assertFalse(ResponseCheck.agrees(LAYOUT, asked(BlockId.of(3, 5, 0)), answer(List.of(described(0, BASE, 99, RKEY)))));
    }

    @Test
    void aLayoutOfAnOutputNotAskedForIsDropped() {
        MapOutputLayout other = new MapOutputLayout(3, 6, BASE, RKEY, new long[] {0, 100});
        assertFalse(ResponseCheck.agrees(other, asked(BlockId.of(3, 5, 0)), answer(List.of(described(0, BASE, 100, RKEY)))));
    }

    @Test
    void aLayoutTooShortForTheBlocksAskedIsDropped() {
        MapOutputLayout shorter = new MapOutputLayout(3, 5, BASE, RKEY, new long[] {0, 100});
        var r = answer(List.of(described(2, BASE + 100, 300, RKEY)));
        assertFalse(ResponseCheck.agrees(shorter, asked(BlockId.of(3, 5, 2)), r));
    }

    @Test
    void aDescriptorOfAnotherBlockIsMalformed() {
        var r = answer(List.of(described(1, BASE, 100, RKEY)));
        Throwable wrong = ResponseCheck.descriptors(r, asked(BlockId.of(3, 5, 0)));
        assertNotNull(wrong);
        assertTrue(wrong.getMessage().contains("shuffle_3_5_1") && wrong.getMessage().contains("shuffle_3_5_0"), wrong.getMessage());
    }

    @Test
    void aRangeThatCannotExistIsMalformed() {
        assertNotNull(ResponseCheck.descriptors(answer(List.of(described(0, 0, 100, RKEY))), asked(BlockId.of(3, 5, 0))));
        assertNotNull(ResponseCheck.descriptors(answer(List.of(described(0, -16, 100, RKEY))), asked(BlockId.of(3, 5, 0))));
        assertNull(ResponseCheck.descriptors(answer(List.of(described(0, BASE, 100, RKEY))), asked(BlockId.of(3, 5, 0))));
    }

    @Test
    void aBlockLongerThanAnyCanBe_isNotRead_andTheReasonNamesTheBlockItsClaimAndTheLimit() {
        int pieceBytes = 4 << 20;
        long longest = ResponseCheck.longestBlock(pieceBytes);
        assertEquals((Integer.MAX_VALUE - 16L) * pieceBytes, longest, "8 PiB less 68 MiB with pieces of 4 MiB");
        var wanted = new Wanted(BlockId.of(3, 5, 0), null);
        for (long claim : new long[] {Long.MAX_VALUE, Long.MAX_VALUE / 2, 8L << 50, longest + 1}) {
            var r = answer(List.of(described(0, BASE, claim, RKEY)));
            assertNull(ResponseCheck.descriptors(r, List.of(wanted)), "a range that can exist: not a malformed answer");
            String why = ResponseCheck.tooLong(r, wanted, r.blocks().getFirst(), pieceBytes);
            assertNotNull(why, claim + " bytes");
            assertTrue(why.contains("shuffle_3_5_0 as " + claim + " bytes") && why.contains(Long.toString(longest)), why);
        }
        var r = answer(List.of(described(0, BASE, longest, RKEY)));
        assertNull(ResponseCheck.tooLong(r, wanted, r.blocks().getFirst(), pieceBytes), "the longest is read");
    }
}
