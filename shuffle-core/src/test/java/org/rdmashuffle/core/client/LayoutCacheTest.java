package org.rdmashuffle.core.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.core.protocol.MapOutputLayout;

/**
 * Every peer's layout cache draws on one budget for the engine ({@code layoutCacheMemory}): what one
 * peer's layouts take, another's cannot, until they go -- pushed out by another shuffle's, aged, or
 * with their connection. The engine-level behaviour (requests saved, layouts sent once) is in
 * {@code LayoutCacheFetchTest}.
 */
class LayoutCacheTest {
    private static final long AGE = 1_000_000_000L;
    /** What one layout of 1,000 partitions costs. */
    private static final long COST = LayoutBudget.cost(1000);

    private static MapOutputLayout layout(int shuffle, long map) {
        return new MapOutputLayout(shuffle, map, 1 << 20, 7, new long[1001]);
    }

    @Test
    void aLayoutCostsItsOffsetsAndItsEntry() {
        LayoutBudget budget = new LayoutBudget(10 * COST);
        LayoutCache cache = new LayoutCache(AGE, budget);
        assertTrue(cache.put(layout(1, 0), 0));
        assertEquals(8L * 1001 + LayoutBudget.ENTRY_OVERHEAD, budget.heldBytes());
        assertEquals(COST, cache.costPerLayout(1));
        assertTrue(cache.put(layout(1, 0), 5), "the same output described again");
        assertEquals(COST, budget.heldBytes(), "counted once");
        cache.forget(1, 0);
        assertEquals(0, budget.heldBytes());
    }

    @Test
    void twoPeersShareOneBudget_whatOneHoldsTheOtherCannotTake() {
        LayoutBudget budget = new LayoutBudget(3 * COST);
        LayoutCache first = new LayoutCache(AGE, budget);
        LayoutCache second = new LayoutCache(AGE, budget);
        assertTrue(first.put(layout(1, 0), 0));
        assertTrue(first.put(layout(1, 1), 0));
        assertTrue(second.put(layout(1, 2), 0));
        assertEquals(0, second.room(1));
        assertFalse(second.put(layout(1, 3), 0), "the budget is spent, by the same shuffle: the first layouts stay");
        assertFalse(first.put(layout(1, 4), 0));
        assertNotNull(first.get(1, 0, 1));
        assertEquals(3 * COST, budget.heldBytes());
    }

    @Test
    void aClosedCacheGivesEveryByteBack_andTakesNothingMore() {
        LayoutBudget budget = new LayoutBudget(3 * COST);
        LayoutCache retired = new LayoutCache(AGE, budget);
        LayoutCache next = new LayoutCache(AGE, budget);
        for (long m = 0; m < 3; m++) {
            assertTrue(retired.put(layout(1, m), 0));
        }
        assertFalse(next.put(layout(1, 9), 0));
        retired.close();
        assertEquals(0, budget.heldBytes());
        assertFalse(retired.put(layout(1, 5), 0), "a closed cache took a layout");
        assertEquals(0, retired.room(1));
        assertNull(retired.get(1, 0, 1));
        assertEquals(3 * COST, next.room(1));
        assertTrue(next.put(layout(1, 9), 0), "the connection's layouts gone, the next one's are kept");
    }

    @Test
    void anotherShufflesLayoutsMakeRoom_leastRecentlyUsedFirst() {
        LayoutBudget budget = new LayoutBudget(3 * COST);
        LayoutCache cache = new LayoutCache(AGE, budget);
        for (long m = 0; m < 3; m++) {
            assertTrue(cache.put(layout(1, m), 0));
        }
        cache.get(1, 0, 1); // output 0 used again: output 1 is the least recently used
        assertEquals(3 * COST, cache.room(2), "shuffle 1's layouts make room for shuffle 2's");
        assertEquals(0, cache.room(1));
        assertTrue(cache.put(layout(2, 0), 2));
        assertFalse(cache.has(1, 1), "the least recently used went");
        assertTrue(cache.has(1, 0));
        assertTrue(cache.has(1, 2));
        assertEquals(3 * COST, budget.heldBytes());
    }

    @Test
    void aLayoutPastItsAgeIsNotUsed_andItsBytesGoBack() {
        LayoutBudget budget = new LayoutBudget(2 * COST);
        LayoutCache cache = new LayoutCache(AGE, budget);
        assertTrue(cache.put(layout(1, 0), 0));
        assertTrue(cache.put(layout(1, 1), AGE / 2));
        assertNull(cache.get(1, 0, AGE + 1), "used past half the lease");
        assertEquals(COST, budget.heldBytes(), "the aged layout's bytes back");
        assertTrue(cache.put(layout(1, 2), AGE + 2));
        assertFalse(cache.put(layout(1, 3), AGE + 3), "neither of the two held is aged");
        assertNull(cache.get(1, 1, 2 * AGE), "output 1's layout aged");
        assertTrue(cache.put(layout(1, 3), 2 * AGE), "and its bytes make room");
    }

    @Test
    void forgettingAShuffleGivesItsBytesBack() {
        LayoutBudget budget = new LayoutBudget(4 * COST);
        LayoutCache cache = new LayoutCache(AGE, budget);
        assertTrue(cache.put(layout(1, 0), 0));
        assertTrue(cache.put(layout(2, 0), 0));
        assertTrue(cache.put(layout(1, 1), 0));
        cache.forget(1);
        assertEquals(COST, budget.heldBytes());
        assertEquals(0, cache.costPerLayout(1));
        assertTrue(cache.has(2, 0));
    }
}
