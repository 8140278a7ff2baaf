package org.rdmashuffle.benchmarks.tpcds;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

/** The arithmetic of a run of several rounds, and the runner's refusal of nonsense round and partition counts. */
class RoundSummaryTest {
    private static TpcdsRunner.Outcome outcome(String q, long builtinMs, long rdmaMs, long overRdma, String verdict) {
        return new TpcdsRunner.Outcome(q, builtinMs, rdmaMs, 1000, 1000, 1, 1, new TpcdsRunner.Carried(false, 500, 0, 0, 0),
                new TpcdsRunner.Carried(true, 500, overRdma, 0, 0), verdict, List.of(), List.of());
    }

    @Test
    void totals_perRoundAndOfPerQueryMedians_skipAQueryNotComparableInSomeRound() {
        List<List<TpcdsRunner.Outcome>> rounds = List.of(
                List.of(outcome("q1", 1000, 900, 10, "match"), outcome("q2", 2000, 2400, 0, "empty"), outcome("q3", 50, 60, 0, "match")),
                List.of(outcome("q1", 1200, 1000, 10, "match"), outcome("q2", 2200, 2000, 0, "match"),
                        outcome("q3", 50, 60, 0, "FAIL rdma: lost")),
                List.of(outcome("q1", 1100, 1300, 10, "match"), outcome("q2", 1800, 2100, 0, "match"), outcome("q3", 50, 60, 0, "match")));
        RoundSummary.Totals all = RoundSummary.totals(rounds, q -> true);
        assertEquals(2, all.queries(), "q3 failed in round 2, so it is in no total");
        assertArrayEquals(new double[] {3.0, 3.4, 2.9}, all.builtinS(), 1e-9);
        assertArrayEquals(new double[] {3.3, 3.0, 3.4}, all.rdmaS(), 1e-9);
        assertEquals(1.1 + 2.0, all.builtinMedianS(), 1e-9);
        assertEquals(1.0 + 2.1, all.rdmaMedianS(), 1e-9);
        assertEquals(3.1 / 3.1, all.medianRatio(), 1e-9);
        RoundSummary.Totals second = RoundSummary.totals(rounds, q -> q == 1);
        assertEquals(1, second.queries());
        assertEquals(2.1 / 2.0, second.medianRatio(), 1e-9);
        assertEquals(1.5, RoundSummary.median(new long[] {2, 1}), 0);
        assertEquals(2, RoundSummary.median(new long[] {3, 1, 2}), 0);
    }

    @Test
    void roundsAndPartitions_refuseNonsense_namingTheOption() {
        for (String[] bad : List.of(new String[] {"--rounds", "0"}, new String[] {"--rounds", "-2"},
                new String[] {"--shuffle-partitions", "many"}, new String[] {"--shuffle-partitions"})) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TpcdsRunner.positive(bad[0], bad, 1));
            assertTrue(e.getMessage().startsWith(bad[0]), e.getMessage());
        }
        assertEquals(1000, TpcdsRunner.positive("--shuffle-partitions", new String[] {"--shuffle-partitions", "1000"}, 1));
    }
}
