package org.rdmashuffle.benchmarks.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The arithmetic of a balanced comparison: the schedule, the pairs' ratios, the interval, the order effect. */
class BalancedPairsTest {
    @Test
    void everyPairRunsEachSystemInBothOrders_andThreeSystemsTakeEveryPlace() {
        List<String> two = List.of("builtin", "rdma");
        assertEquals(List.of("builtin", "rdma"), BalancedPairs.order(two, 0));
        assertEquals(List.of("rdma", "builtin"), BalancedPairs.order(two, 1));
        assertEquals(List.of("rdma", "builtin"), BalancedPairs.order(two, 2)); // pair 2 rotated: it starts where pair 1 ended
        assertEquals(List.of("builtin", "rdma"), BalancedPairs.order(two, 3));
        List<String> three = List.of("a", "b", "c");
        Map<String, List<Integer>> places = new HashMap<>();
        for (int round = 0; round < 6; round++) {
            List<String> order = BalancedPairs.order(three, round);
            assertEquals(3, order.stream().distinct().count(), order.toString());
            if (round % 2 == 1) {
                assertEquals(BalancedPairs.order(three, round - 1).reversed(), order);
            }
            for (int k = 0; k < 3; k++) {
                places.computeIfAbsent(order.get(k), x -> new ArrayList<>()).add(k);
            }
        }
        for (List<Integer> p : places.values()) { // three pairs: each system twice in every place
            assertEquals(List.of(0, 0, 1, 1, 2, 2), p.stream().sorted().toList());
        }
    }

    /**
     * A system that costs the same as the baseline, on a machine whose second run of a round takes 30% longer:
     * a ratio per round says 1.3 or 0.77 by who went first; a pair says 1.00 and the order effect names the 1.3.
     */
    @Test
    void aSlowSecondPlace_cancelsInEveryPair_andShowsAsTheOrderEffect() {
        List<String> systems = List.of("builtin", "rdma");
        List<Map<String, Double>> walls = new ArrayList<>();
        for (int round = 0; round < 6; round++) {
            List<String> order = BalancedPairs.order(systems, round);
            walls.add(Map.of(order.get(0), 100.0, order.get(1), 130.0));
        }
        BalancedPairs.Figures f = new BalancedPairs.Figures(systems, walls);
        assertEquals(List.of(1.0, 1.0, 1.0), f.pairRatios("rdma", "builtin"));
        assertEquals(1.3, f.orderEffect().get("rdma"), 1e-9);
        assertEquals(1.3, f.orderEffect().get("builtin"), 1e-9);
        BalancedPairs.Ratio r = BalancedPairs.ratio(f.pairRatios("rdma", "builtin"));
        assertEquals(1.0, r.median(), 1e-9);
        assertEquals(1.0, r.low(), 1e-9);
        assertEquals(1.0, r.high(), 1e-9);
    }

    @Test
    void theIntervalIsStudentsTOverLogRatios_andOnePairHasNone() {
        BalancedPairs.Ratio r = BalancedPairs.ratio(List.of(0.8, 0.9, 1.0));
        assertEquals(0.9, r.median(), 1e-12);
        double[] logs = {Math.log(0.8), Math.log(0.9), Math.log(1.0)};
        double mean = (logs[0] + logs[1] + logs[2]) / 3;
        double sd = Math.sqrt(((logs[0] - mean) * (logs[0] - mean) + (logs[1] - mean) * (logs[1] - mean)
                + (logs[2] - mean) * (logs[2] - mean)) / 2);
        assertEquals(Math.exp(mean - 2.920 * sd / Math.sqrt(3)), r.low(), 1e-12);
        assertEquals(Math.exp(mean + 2.920 * sd / Math.sqrt(3)), r.high(), 1e-12);
        assertTrue(r.low() < 0.8 && r.high() > 1.0, r.toString()); // three pairs this far apart: wide
        assertEquals("0.90 (3 pairs, 90% interval " + String.format(java.util.Locale.ROOT, "%.2f-%.2f", r.low(), r.high())
                + ", 3 hosts)", r.describe("3 hosts"));
        assertEquals("0.95 (1 pair, no interval from one pair, 1 host)", BalancedPairs.ratio(List.of(0.95)).describe("1 host"));
        assertEquals("- (2 pairs, the baseline's figure was 0, 1 host)",
                BalancedPairs.ratio(List.of(0.9, Double.NaN)).describe("1 host"));
    }

    @Test
    void aPairRatioIsTheSumOfTwoRunsOverTheBaselinesTwo_andRoundsMustComeInWholePairs() {
        List<String> systems = List.of("builtin", "rdma");
        BalancedPairs.Figures f = new BalancedPairs.Figures(systems, List.of(
                Map.of("builtin", 100.0, "rdma", 90.0), Map.of("rdma", 50.0, "builtin", 100.0)));
        assertEquals(List.of(0.7), f.pairRatios("rdma", "builtin"));
        assertEquals(90.0 / 50.0, f.orderEffect().get("rdma"), 1e-12); // later (second) in round 1: 90; earlier in round 2: 50
        assertThrows(IllegalArgumentException.class, () -> new BalancedPairs.Figures(systems, List.of(Map.of("builtin", 1.0, "rdma", 1.0))));
        assertThrows(IllegalArgumentException.class, () -> new BalancedPairs.Figures(systems,
                List.of(Map.of("builtin", 1.0), Map.of("builtin", 1.0, "rdma", 1.0))));
    }

    @Test
    void theStudentTTableFallsTowardTheNormal() {
        assertEquals(6.314, BalancedPairs.studentT95(1));
        assertEquals(1.697, BalancedPairs.studentT95(30));
        assertEquals(1.645, BalancedPairs.studentT95(1000));
        assertThrows(IllegalArgumentException.class, () -> BalancedPairs.studentT95(0));
    }

    @Test
    void anExecutorIsKnownByItsClassAndItsApplication_notBySharingAPrefix() {
        String line = "/usr/bin/java -cp x org.apache.spark.executor.CoarseGrainedExecutorBackend --driver-url spark://d "
                + "--executor-id 1 --hostname 10.0.0.3 --cores 1 --app-id app-20261202-0001 --worker-url spark://w";
        assertTrue(RunSeparation.isExecutorOf(line, "app-20261202-0001"));
        assertTrue(!RunSeparation.isExecutorOf(line, "app-20261202-000"));
        assertTrue(!RunSeparation.isExecutorOf(line.replace("CoarseGrainedExecutorBackend", "Worker"), "app-20261202-0001"));
        assertTrue(RunSeparation.isExecutorOf("java org.apache.spark.executor.CoarseGrainedExecutorBackend --app-id a-1", "a-1"));
        assertTrue(RunSeparation.isExecutorOf("java org.apache.spark.executor.YarnCoarseGrainedExecutorBackend --app-id "
                + "application_1_0001 --resourceProfileId 0", "application_1_0001"));
    }
}
