package org.rdmashuffle.benchmarks.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Comparisons no run order can bias. A comparison is N pairs; a pair is two rounds, every system once in
 * each, the second round in the reverse order of the first (AB then BA; with three systems ABC then CBA,
 * rotated from pair to pair so each takes every place). Whatever the place in a round costs (the second
 * application of a round on the bed is often markedly slower) then falls on both sides alike.
 *
 * <p>What comes out, for a figure such as wall time: each pair's ratio of a system to the baseline (the
 * sum of its two runs over the baseline's two), their median, a 90% interval over pairs, and the order
 * effect: for each system, its run later in a round over its run earlier in the other round of the same
 * pair (1.00: the place did not matter). Pure arithmetic, no Spark: {@code ShuffleJob --compare} and the
 * TPC-DS runner run the rounds and hand the figures in.
 */
public final class BalancedPairs {
    private BalancedPairs() {
    }

    /** The systems in the order round {@code round} (0-based, two per pair) runs them. */
    public static List<String> order(List<String> systems, int round) {
        int n = systems.size();
        int pair = round / 2;
        List<String> first = new ArrayList<>(n);
        for (int k = 0; k < n; k++) {
            first.add(systems.get((pair + k) % n));
        }
        return round % 2 == 0 ? first : first.reversed();
    }

    /**
     * One figure of every run of a comparison: {@code values.get(round).get(system)}, rounds in the order
     * they ran (a whole number of pairs, each round as {@link #order} gave it).
     */
    public record Figures(List<String> systems, List<Map<String, Double>> values) {
        public Figures {
            if (values.isEmpty() || values.size() % 2 != 0) {
                throw new IllegalArgumentException("a balanced comparison has whole pairs of rounds, not " + values.size() + " rounds");
            }
            for (Map<String, Double> round : values) {
                if (!round.keySet().containsAll(systems)) {
                    throw new IllegalArgumentException("a round lacks a system: " + round.keySet() + " of " + systems);
                }
            }
            systems = List.copyOf(systems);
            values = List.copyOf(values);
        }

        int pairs() {
            return values.size() / 2;
        }

        /** Each pair's ratio of {@code system} to {@code baseline}: the sum of its two runs over the baseline's two. */
        public List<Double> pairRatios(String system, String baseline) {
            List<Double> ratios = new ArrayList<>();
            for (int p = 0; p < pairs(); p++) {
                Map<String, Double> a = values.get(2 * p);
                Map<String, Double> b = values.get(2 * p + 1);
                double base = a.get(baseline) + b.get(baseline);
                ratios.add(base > 0 ? (a.get(system) + b.get(system)) / base : Double.NaN);
            }
            return ratios;
        }

        /**
         * For each system, the median over pairs of its run later in a round over its run earlier in the
         * pair's other round; a pair where it held the same place in both (the middle of three) says nothing.
         * NaN for a system that never changed place.
         */
        public Map<String, Double> orderEffect() {
            Map<String, Double> effect = new LinkedHashMap<>();
            for (String s : systems) {
                List<Double> ratios = new ArrayList<>();
                for (int p = 0; p < pairs(); p++) {
                    int placeA = order(systems, 2 * p).indexOf(s);
                    int placeB = order(systems, 2 * p + 1).indexOf(s);
                    double a = values.get(2 * p).get(s);
                    double b = values.get(2 * p + 1).get(s);
                    if (placeA != placeB) {
                        double later = placeA > placeB ? a : b;
                        double earlier = placeA > placeB ? b : a;
                        if (earlier > 0) {
                            ratios.add(later / earlier);
                        }
                    }
                }
                effect.put(s, ratios.isEmpty() ? Double.NaN : median(ratios));
            }
            return effect;
        }
    }

    /** A ratio over pairs: the median of the pairs' ratios and, from two pairs on, a 90% interval. */
    public record Ratio(double median, double low, double high, int pairs) {
        /** "0.92 (3 pairs, 90% interval 0.85-0.99, {@code where})"; one pair has no interval. */
        public String describe(String where) {
            if (Double.isNaN(median)) {
                return "- (" + pairsWord(pairs) + ", the baseline's figure was 0, " + where + ")";
            }
            return String.format(Locale.ROOT, "%.2f (%s, %s, %s)", median, pairsWord(pairs),
                    Double.isNaN(low) ? "no interval from one pair" : String.format(Locale.ROOT, "90%% interval %.2f-%.2f", low, high), where);
        }
    }

    static String pairsWord(int pairs) {
        return pairs + (pairs == 1 ? " pair" : " pairs");
    }

    /**
     * The median of {@code pairRatios} and a 90% interval for their central value: Student's t over the
     * ratios' logarithms (a ratio and its inverse are equally far from 1), so it widens honestly when pairs
     * are few. NaN bounds for fewer than two pairs; NaN throughout when any ratio is undefined.
     */
    public static Ratio ratio(List<Double> pairRatios) {
        int n = pairRatios.size();
        if (n == 0 || pairRatios.stream().anyMatch(r -> Double.isNaN(r) || r <= 0)) {
            return new Ratio(Double.NaN, Double.NaN, Double.NaN, n);
        }
        double median = median(pairRatios);
        if (n < 2) {
            return new Ratio(median, Double.NaN, Double.NaN, n);
        }
        double mean = pairRatios.stream().mapToDouble(Math::log).average().orElseThrow();
        double ss = pairRatios.stream().mapToDouble(r -> (Math.log(r) - mean) * (Math.log(r) - mean)).sum();
        double half = studentT95(n - 1) * Math.sqrt(ss / (n - 1) / n);
        return new Ratio(median, Math.exp(mean - half), Math.exp(mean + half), n);
    }

    /** The 95th percentile of Student's t with {@code df} degrees of freedom (a two-sided 90% interval). */
    static double studentT95(int df) {
        double[] table = {6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812,
                1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725,
                1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697};
        if (df < 1) {
            throw new IllegalArgumentException("degrees of freedom must be at least 1: " + df);
        }
        return df <= table.length ? table[df - 1] : df <= 60 ? 1.671 : df <= 120 ? 1.658 : 1.645;
    }

    /** The median of a non-empty list of figures (for an even count, the mean of the middle two). */
    public static double median(List<Double> values) {
        List<Double> sorted = values.stream().sorted().toList();
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    /** "order effect (...): built-in 1.08, rdma-shuffle 1.11", with each system's name from {@code names}. */
    public static String describeOrderEffect(Map<String, Double> effect, Map<String, String> names) {
        StringBuilder b = new StringBuilder("order effect (a system's run later in a round over its run earlier in the "
                + "pair's other round, median over pairs; 1.00: the place did not matter):");
        String sep = " ";
        for (Map.Entry<String, Double> e : effect.entrySet()) {
            b.append(sep).append(names.getOrDefault(e.getKey(), e.getKey())).append(' ')
                    .append(Double.isNaN(e.getValue()) ? "-" : String.format(Locale.ROOT, "%.2f", e.getValue()));
            sep = ", ";
        }
        return b.toString();
    }
}
