package org.rdmashuffle.benchmarks.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The main job's options: maps and reducers set apart or together, nonsense refused naming the option. */
class JobOptionsTest {
    @Test
    void mapsAndReducersAreSetApart_orTogetherByPartitions() {
        JobOptions apart = JobOptions.parse("--maps", "400", "--reducers", "1000", "--rows", "1000000");
        assertEquals(400, apart.maps());
        assertEquals(1000, apart.reducers());
        JobOptions together = JobOptions.parse("--partitions", "8");
        assertEquals(8, together.maps());
        assertEquals(8, together.reducers());
        JobOptions defaults = JobOptions.parse();
        assertEquals(16, defaults.maps());
        assertEquals(16, defaults.reducers());
        assertEquals(5_000_000, defaults.rows());
        assertEquals("main", defaults.job());
        assertEquals("sort", JobOptions.parse("--job", "sort").job());
        assertEquals(3_500_000, JobOptions.parse("--job", "sort").rows()); // about the main job's 350 MB of shuffle
        assertEquals(35_000_000, JobOptions.parse("--job", "sort", "--rows", "35000000").rows());
        assertEquals(7, JobOptions.parse("--reducers", "7").reducers());
        assertEquals(16, JobOptions.parse("--reducers", "7").maps());
    }

    @Test
    void aComparisonWarmsUpAtMostAtTheDefaultSize_unlessToldNot() {
        JobOptions big = JobOptions.parse("--rows", "50000000", "--maps", "64", "--reducers", "64", "--compare", "1");
        assertTrue(big.warmUp());
        assertEquals(5_000_000, big.warmUpRows());
        assertEquals(3_500_000, JobOptions.parse("--job", "sort", "--rows", "300000000").warmUpRows());
        assertEquals(300_000, JobOptions.parse("--rows", "300000").warmUpRows(), "never more than the job's own rows");
        assertEquals(6_000_000, JobOptions.parse("--rows", "8000000", "--maps", "6000000").warmUpRows(), "a row for every map");
        assertEquals(false, JobOptions.parse("--compare", "1", "--no-warm-up").warmUp());
        JobOptions small = big.withRows(big.warmUpRows());
        assertEquals(5_000_000, small.rows());
        assertEquals(64, small.maps());
        assertEquals(64, small.reducers());
    }

    @Test
    void aCountOfZeroOrBelow_orNotANumber_isRefusedNamingTheOption() {
        for (String option : new String[] {"--maps", "--reducers", "--partitions", "--rows", "--compare", "--executors", "--hold-after-maps", "--executor-wait"}) {
            for (String bad : new String[] {"0", "-3", "many"}) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> JobOptions.parse(option, bad),
                        option + " " + bad);
                assertTrue(e.getMessage().startsWith(option + " ") && e.getMessage().contains(bad), e.getMessage());
            }
        }
    }

    @Test
    void partitionsWithMapsOrReducers_fewerRowsThanMaps_aMissingValue_andAnUnknownOption_areRefused() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> JobOptions.parse("--partitions", "4", "--maps", "2"))
                .getMessage().contains("--partitions"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> JobOptions.parse("--rows", "2", "--maps", "3"))
                .getMessage().contains("--maps"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> JobOptions.parse("--maps")).getMessage()
                .startsWith("--maps needs a value"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> JobOptions.parse("--mappers", "3")).getMessage()
                .startsWith("unknown argument --mappers"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> JobOptions.parse("--shuffle", "tcp")).getMessage()
                .startsWith("--shuffle takes rdma, builtin or both"));
        assertEquals("both", JobOptions.parse("--shuffle", "both").shuffle());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> JobOptions.parse("--job", "terasort")).getMessage()
                .startsWith("--job takes main or sort, not 'terasort'"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> JobOptions.parse("--job")).getMessage()
                .startsWith("--job needs a value"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> JobOptions.parse("--job", "sort", "--maps", "4000000"))
                .getMessage().startsWith("--rows 3500000 is fewer than the 4000000 maps"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> JobOptions.parse("--shuffle", "both", "--compare", "2"))
                .getMessage().contains("give one of them"));
    }
}
