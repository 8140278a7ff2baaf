package org.rdmashuffle.benchmarks.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

/** The sort job's records, its range partitioning, and the check its result comes from. */
class SortJobRowsTest {
    @Test
    void everyMapMakesItsShareOfTheRows_ofTeraSortsShape_theSameEveryTime() {
        int rows = 1_003;
        int maps = 4;
        int made = 0;
        for (int p = 0; p < maps; p++) {
            SortJobRows a = new SortJobRows(p, rows, maps);
            SortJobRows b = new SortJobRows(p, rows, maps);
            while (a.hasNext()) {
                byte[] key = a.next();
                assertEquals(SortJobRows.KEY_BYTES, key.length);
                assertEquals(SortJobRows.VALUE_BYTES, a.value().length);
                assertEquals(java.util.Arrays.toString(key), java.util.Arrays.toString(b.next()));
                assertEquals(java.util.Arrays.toString(a.value()), java.util.Arrays.toString(b.value()));
                made++;
            }
            assertFalse(b.hasNext());
        }
        assertEquals(rows, made);
        assertNotEquals(java.util.Arrays.toString(new SortJobRows(0, 10, 2).next()),
                java.util.Arrays.toString(new SortJobRows(1, 10, 2).next()), "each map its own records");
    }

    /** A key of a lower partition sorts before every key of a higher one, and random keys fill the partitions evenly. */
    @Test
    void partitionsAreRangesOfTheKeySpace_inOrder_andEven() {
        int partitions = 7;
        List<byte[]> keys = new ArrayList<>();
        for (SortJobRows it = new SortJobRows(0, 70_000, 1); it.hasNext(); ) {
            keys.add(it.next());
        }
        keys.add(new byte[SortJobRows.KEY_BYTES]); // the smallest key
        byte[] largest = new byte[SortJobRows.KEY_BYTES];
        java.util.Arrays.fill(largest, (byte) 0xFF);
        keys.add(largest);
        keys.sort(SortJobRows::compareKeys);
        int[] counts = new int[partitions];
        int previous = 0;
        for (byte[] k : keys) {
            int p = SortJobRows.partition(k, partitions);
            assertTrue(p >= previous && p < partitions, "partition " + p + " after " + previous);
            previous = p;
            counts[p]++;
        }
        assertEquals(0, SortJobRows.partition(keys.get(0), partitions));
        assertEquals(partitions - 1, SortJobRows.partition(largest, partitions));
        for (int c : counts) {
            assertTrue(Math.abs(c - 10_000) < 500, java.util.Arrays.toString(counts)); // 5 standard deviations is about 470
        }
    }

    @Test
    void theExpectedResult_isSorted_countsEveryRow_andDependsOnTheRecords() {
        String expected = SortJobRows.expectedResult(20_000, 4, 5);
        assertTrue(SortJobRows.saysSorted(expected), expected);
        assertTrue(expected.startsWith("20000 rows in 5 of 5 partitions, sorted, checksum "), expected);
        assertEquals(expected, SortJobRows.expectedResult(20_000, 4, 5));
        // The checksum is of the records, not of where they went: other reducers, the same checksum.
        String checksum = expected.substring(expected.indexOf("checksum"));
        assertTrue(SortJobRows.expectedResult(20_000, 4, 3).endsWith(checksum));
        assertFalse(SortJobRows.expectedResult(20_001, 4, 5).endsWith(checksum));
    }

    @Test
    void anOutputOutOfOrder_withinAPartition_orAcrossPartitions_isNotSorted() {
        byte[] low = {0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        byte[] high = {(byte) 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        byte[] value = new byte[SortJobRows.VALUE_BYTES];
        SortJobRows.Check inOrder = check(new byte[][] {low, high}, value);
        SortJobRows.Check reversed = check(new byte[][] {high, low}, value);
        SortJobRows.Check empty = new SortJobRows.Check();
        assertTrue(SortJobRows.saysSorted(SortJobRows.result(List.of(inOrder, empty))));
        assertFalse(SortJobRows.saysSorted(SortJobRows.result(List.of(reversed))));
        SortJobRows.Check first = check(new byte[][] {high}, value);
        SortJobRows.Check second = check(new byte[][] {low}, value);
        String acrossEmpty = SortJobRows.result(List.of(first, empty, second)); // an empty partition between them hides nothing
        assertFalse(SortJobRows.saysSorted(acrossEmpty), acrossEmpty);
        assertTrue(acrossEmpty.startsWith("2 rows in 2 of 3 partitions, NOT SORTED"), acrossEmpty);
        // The same records, sorted or not: the same checksum (what differs is the order, which the result says apart).
        String sorted = SortJobRows.result(List.of(check(new byte[][] {low}, value), empty, check(new byte[][] {high}, value)));
        assertEquals(sorted.substring(sorted.indexOf("checksum")), acrossEmpty.substring(acrossEmpty.indexOf("checksum")));
    }

    private static SortJobRows.Check check(byte[][] keys, byte[] value) {
        SortJobRows.Check c = new SortJobRows.Check();
        for (byte[] k : keys) {
            c.add(k, value);
        }
        return c;
    }
}
