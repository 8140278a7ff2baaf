package org.rdmashuffle.benchmarks.tpcds;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.benchmarks.spark.BalancedPairs;

/**
 * The runner's balanced pairs: the order every round runs every query in, the arithmetic of the pairs'
 * ratios and of the order effect, what a run writes, and the refusal of nonsense pair and partition
 * counts and of the old --rounds.
 */
class RoundSummaryTest {
    private static final List<String> BUILTIN_FIRST = List.of("builtin", "rdma");
    private static final List<String> RDMA_FIRST = List.of("rdma", "builtin");

    @TempDir
    Path dir;

    private static TpcdsRunner.Outcome outcome(String q, long builtinMs, long rdmaMs, long overRdma, String verdict) {
        return new TpcdsRunner.Outcome(q, builtinMs, rdmaMs, 1000, 1000, 1, 1, new TpcdsRunner.Carried(false, 500, 0, 0, 0),
                new TpcdsRunner.Carried(true, 500, overRdma, 0, 0), verdict, List.of(), List.of());
    }

    @Test
    void aQuerysTwoRoundsOfAPairRunInOppositeOrders_andBothSidesStartPairsEquallyOften() {
        assertEquals(BUILTIN_FIRST, TpcdsRunner.order(0, 0));
        assertEquals(RDMA_FIRST, TpcdsRunner.order(0, 1));
        assertEquals(RDMA_FIRST, TpcdsRunner.order(1, 0)); // the next query starts its pair the other way
        assertEquals(BUILTIN_FIRST, TpcdsRunner.order(1, 1));
        assertEquals(RDMA_FIRST, TpcdsRunner.order(0, 2)); // and so does the next pair
        assertEquals(BUILTIN_FIRST, TpcdsRunner.order(0, 3));
        int queries = 7;
        int pairs = 4;
        Map<String, Integer> starts = new HashMap<>();
        for (int q = 0; q < queries; q++) {
            Map<String, Integer> startsOfThisQuery = new HashMap<>();
            for (int p = 0; p < pairs; p++) {
                List<String> a = TpcdsRunner.order(q, 2 * p);
                List<String> b = TpcdsRunner.order(q, 2 * p + 1);
                assertEquals(2, a.stream().distinct().count(), a.toString());
                assertTrue(a.containsAll(TpcdsRunner.SYSTEMS), a.toString());
                assertEquals(a.reversed(), b, "query " + q + ", pair " + p);
                startsOfThisQuery.merge(a.getFirst(), 1, Integer::sum);
                starts.merge(a.getFirst(), 1, Integer::sum);
                if (q > 0) { // within a round the side that goes first alternates from query to query
                    assertNotEquals(TpcdsRunner.order(q - 1, 2 * p).getFirst(), a.getFirst(), "query " + q + ", round " + 2 * p);
                    assertNotEquals(TpcdsRunner.order(q - 1, 2 * p + 1).getFirst(), b.getFirst(), "query " + q + ", round " + (2 * p + 1));
                }
            }
            // four pairs: every query starts two of them with each side, not all four with the same one
            assertEquals(Map.of("builtin", 2, "rdma", 2), startsOfThisQuery, "query " + q);
        }
        assertEquals(Map.of("builtin", queries * pairs / 2, "rdma", queries * pairs / 2), starts);
    }

    @Test
    void aPairsRatioIsItsTwoRoundsSummedRdmaOverBuiltIn_andTheOrderEffectComparesLikeQueries() {
        // Two pairs. q1 starts pair 1 with built-in (rounds 1 built-in first, 2 rdma first), pair 2 with rdma;
        // q2 the other way round; q3 failed in round 2, so it is in no total.
        List<List<TpcdsRunner.Outcome>> rounds = List.of(
                List.of(outcome("q1", 1000, 900, 10, "match"), outcome("q2", 2000, 2400, 0, "empty"), outcome("q3", 50, 60, 0, "match")),
                List.of(outcome("q1", 1200, 1000, 10, "match"), outcome("q2", 2200, 2000, 0, "match"),
                        outcome("q3", 50, 60, 0, "FAIL rdma: lost")),
                List.of(outcome("q1", 1100, 1300, 10, "match"), outcome("q2", 1800, 2100, 0, "match"), outcome("q3", 50, 60, 0, "match")),
                List.of(outcome("q1", 900, 1100, 10, "match"), outcome("q2", 2000, 1900, 0, "match"), outcome("q3", 50, 60, 0, "match")));
        RoundSummary.Totals all = RoundSummary.totals(rounds, q -> true);
        assertEquals(2, all.queries(), "q3 failed in round 2, so it is in no total");
        assertArrayEquals(new double[] {3.0, 3.4, 2.9, 2.9}, all.builtinS(), 1e-9); // every round's totals kept
        assertArrayEquals(new double[] {3.3, 3.0, 3.4, 3.0}, all.rdmaS(), 1e-9);
        List<Double> pairs = all.pairRatios();
        assertEquals(2, pairs.size());
        assertEquals((3.3 + 3.0) / (3.0 + 3.4), pairs.get(0), 1e-12);
        assertEquals((3.4 + 3.0) / (2.9 + 2.9), pairs.get(1), 1e-12);
        assertEquals(((3.3 + 3.0) / (3.0 + 3.4) + (3.4 + 3.0) / (2.9 + 2.9)) / 2, all.ratio().median(), 1e-12);
        assertEquals(BalancedPairs.ratio(pairs), all.ratio());
        // Order effect, per pair: a side's queries run second over the same queries run first, then the median.
        // Built-in second: pair 1 q1 round 2 (1200) + q2 round 1 (2000), first: q1 round 1 (1000) + q2 round 2 (2200);
        // pair 2 second: q1 round 3 (1100) + q2 round 4 (2000), first: q1 round 4 (900) + q2 round 3 (1800).
        assertEquals((3200.0 / 3200 + 3100.0 / 2700) / 2, all.orderEffect().get("builtin"), 1e-12);
        // rdma second: pair 1 q1 round 1 (900) + q2 round 2 (2000), first: 1000 + 2400; pair 2: 1100 + 2100 over 1300 + 1900.
        assertEquals((2900.0 / 3400 + 3200.0 / 3200) / 2, all.orderEffect().get("rdma"), 1e-12);
        RoundSummary.Totals second = RoundSummary.totals(rounds, q -> q == 1);
        assertEquals(1, second.queries());
        assertEquals(List.of(4400.0 / 4200, 4000.0 / 3800), second.pairRatios());
        // Per query, the same arithmetic on its own times.
        assertEquals(List.of(1900.0 / 2200, 2400.0 / 2000), RoundSummary.pairRatios(rounds, 0));
        assertEquals(List.of(4400.0 / 4200, 4000.0 / 3800), RoundSummary.pairRatios(rounds, 1));
    }

    /**
     * The same cost on both sides, on a bed where a query's second run in a round takes 30% longer: every
     * round's ratio of totals is off 1 (the queries differ in cost and alternate who goes first), every
     * pair says 1.000, and the order effect names the 1.3 on both sides.
     */
    @Test
    void aSlowSecondPlace_cancelsInEveryPair_andShowsAsTheOrderEffect() {
        long[] costs = {1000, 4000, 6000};
        List<List<TpcdsRunner.Outcome>> rounds = new ArrayList<>();
        for (int k = 0; k < 6; k++) {
            List<TpcdsRunner.Outcome> round = new ArrayList<>();
            for (int q = 0; q < costs.length; q++) {
                boolean builtinFirst = TpcdsRunner.order(q, k).getFirst().equals("builtin");
                long first = costs[q];
                long second = costs[q] * 13 / 10;
                round.add(outcome("q" + q, builtinFirst ? first : second, builtinFirst ? second : first, 0, "match"));
            }
            rounds.add(round);
        }
        RoundSummary.Totals all = RoundSummary.totals(rounds, q -> true);
        for (int k = 0; k < 6; k++) {
            assertTrue(Math.abs(all.rdmaS()[k] / all.builtinS()[k] - 1) > 0.05,
                    "round " + k + ": " + all.rdmaS()[k] + " / " + all.builtinS()[k]);
        }
        for (double r : all.pairRatios()) {
            assertEquals(1.0, r, 1e-12);
        }
        assertEquals(3, all.pairRatios().size());
        assertEquals(1.3, all.orderEffect().get("builtin"), 1e-12);
        assertEquals(1.3, all.orderEffect().get("rdma"), 1e-12);
        for (int q = 0; q < costs.length; q++) {
            assertEquals(List.of(1.0, 1.0, 1.0), RoundSummary.pairRatios(rounds, q));
        }
    }

    @Test
    void onePair_writesEveryRoundsTimes_thePairsRatioAndTheOrderEffect() throws Exception {
        List<List<TpcdsRunner.Outcome>> rounds = List.of(
                List.of(outcome("q3", 1000, 1100, 5, "match"), outcome("q7", 3000, 2700, 0, "match")),
                List.of(outcome("q3", 1300, 900, 5, "match"), outcome("q7", 2600, 3300, 0, "match")));
        RoundSummary.write(rounds, 0.1, "local", dir);
        List<String> csv = Files.readAllLines(dir.resolve("rounds.csv"));
        assertEquals(List.of("query,round,pair,first,builtin_ms,rdma_ms,rdma_bytes_over_engine,verdict",
                "q3,1,1,builtin,1000,1100,5,\"match\"", "q3,2,1,rdma,1300,900,5,\"match\"",
                "q7,1,1,rdma,3000,2700,0,\"match\"", "q7,2,1,builtin,2600,3300,0,\"match\""), csv);
        String md = Files.readString(dir.resolve("rounds.md"));
        assertTrue(md.startsWith("TPC-DS scale 0.1 (local), 2 queries, 1 pair (2 rounds)"), md);
        // (1.1 + 0.9 + 2.7 + 3.3) / (1.0 + 1.3 + 3.0 + 2.6) = 8.0 / 7.9
        assertTrue(md.contains("total time, rdma-shuffle / built-in: " + BalancedPairs.ratio(List.of(8.0 / 7.9)).describe(
                "2 queries comparable in every round; a pair's ratio is its two rounds' rdma-shuffle total over their built-in total")), md);
        assertTrue(md.contains("1.01 (1 pair, no interval from one pair"), md);
        // built-in second: q3 round 2 (1.3) + q7 round 1 (3.0) over first: q3 round 1 (1.0) + q7 round 2 (2.6);
        // rdma-shuffle second: q3 round 1 (1.1) + q7 round 2 (3.3) over first: q3 round 2 (0.9) + q7 round 1 (2.7)
        Map<String, Double> effect = new LinkedHashMap<>();
        effect.put("builtin", 4.3 / 3.6);
        effect.put("rdma", 4.4 / 3.6);
        String line = BalancedPairs.describeOrderEffect(effect, Map.of("builtin", "built-in", "rdma", "rdma-shuffle"));
        assertTrue(line.endsWith(": built-in 1.19, rdma-shuffle 1.22") && md.contains(line), line + "\n" + md);
        assertTrue(md.contains("| 1.19 / 1.22 |"), md);
        assertTrue(md.contains("| q3 | built-in, rdma-shuffle | 1000, 1300 | 1100, 900 | 0.870 | 0.87 | match |"), md);
        assertTrue(md.contains("| q7 | rdma-shuffle, built-in | 3000, 2600 | 2700, 3300 | 1.071 | 1.07 | match |"), md);
        assertTrue(md.contains("| queries that moved nothing over the engine | 1 | 3.0, 2.6 | 2.7, 3.3 | 1.071 |"), md);
    }

    @Test
    void pairsAndPartitions_refuseNonsense_namingTheOption_andRoundsSaysItBecamePairs() {
        for (String[] bad : List.of(new String[] {"--pairs", "0"}, new String[] {"--pairs", "-2"},
                new String[] {"--shuffle-partitions", "many"}, new String[] {"--shuffle-partitions"})) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TpcdsRunner.positive(bad[0], bad, 1));
            assertTrue(e.getMessage().startsWith(bad[0]), e.getMessage());
        }
        assertEquals(1000, TpcdsRunner.positive("--shuffle-partitions", new String[] {"--shuffle-partitions", "1000"}, 1));
        assertEquals("--pairs must be at least 1, not 0",
                assertThrows(IllegalArgumentException.class, () -> TpcdsRunner.Options.parse("--pairs", "0")).getMessage());
        String rounds = assertThrows(IllegalArgumentException.class, () -> TpcdsRunner.Options.parse("--rounds", "3")).getMessage();
        assertTrue(rounds.startsWith("--rounds became --pairs N") && rounds.endsWith("give --pairs instead of --rounds 3")
                && !rounds.contains("\n"), rounds);
        assertTrue(assertThrows(IllegalArgumentException.class, () -> TpcdsRunner.Options.parse("--rounds")).getMessage()
                .endsWith("instead of --rounds"));
    }
}
