package org.rdmashuffle.core.buffer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.Test;

/** The buddy allocator against a model: blocks never overlap, are aligned, and merge back into the whole. */
class BuddyAllocatorTest {
    private record Block(int unit, int order) {
    }

    @Test
    void randomAllocationsNeverOverlapAndFreeingEverythingMergesBackToOneBlock() {
        int levels = 8;
        BuddyAllocator buddies = new BuddyAllocator(levels);
        BitSet taken = new BitSet(1 << levels);
        List<Block> out = new ArrayList<>();
        Random random = new Random(7);
        for (int step = 0; step < 20_000; step++) {
            if (!out.isEmpty() && random.nextInt(3) == 0) {
                Block b = out.remove(random.nextInt(out.size()));
                buddies.free(b.unit, b.order);
                taken.clear(b.unit, b.unit + (1 << b.order));
                continue;
            }
            int order = random.nextInt(levels + 1);
            int unit = buddies.allocate(order);
            boolean fits = hasAlignedRun(taken, levels, order);
            assertEquals(fits, unit >= 0, "order " + order + ": a free aligned run exists: " + fits + ", allocated at " + unit);
            if (unit >= 0) {
                assertEquals(0, unit % (1 << order), "aligned");
                assertTrue(taken.get(unit, unit + (1 << order)).isEmpty(), "overlaps a block handed out");
                taken.set(unit, unit + (1 << order));
                out.add(new Block(unit, order));
            }
        }
        for (Block b : out) {
            buddies.free(b.unit, b.order);
        }
        assertTrue(buddies.isEmpty());
        assertEquals(0, buddies.allocate(levels), "merged back into one block");
    }

    private static boolean hasAlignedRun(BitSet taken, int levels, int order) {
        for (int u = 0; u < 1 << levels; u += 1 << order) {
            if (taken.get(u, u + (1 << order)).isEmpty()) {
                return true;
            }
        }
        return false;
    }

    @Test
    void freeingABlockNotHandedOutFails() {
        BuddyAllocator buddies = new BuddyAllocator(4);
        int unit = buddies.allocate(1);
        buddies.free(unit, 1);
        assertThrows(IllegalStateException.class, () -> buddies.free(unit, 1));
        assertFalse(buddies.largestFreeOrder() < 4);
    }
}
