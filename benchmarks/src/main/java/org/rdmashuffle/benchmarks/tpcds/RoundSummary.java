package org.rdmashuffle.benchmarks.tpcds;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.IntPredicate;

import org.rdmashuffle.benchmarks.spark.BalancedPairs;

/**
 * A TPC-DS run of N balanced pairs (2N rounds, {@link TpcdsRunner#order}), summed up: every round's
 * times for every query (nothing dropped) and, per query, the median of its pairs' ratios
 * (rdma-shuffle / built-in, a pair's ratio being the sum of the rdma side's two runs over the built-in
 * side's two); for the whole run, each round's totals, each pair's ratio of the totals, their median
 * with a 90% interval, and the order effect of both sides. Only queries comparable in every round
 * (identical, empty on both or not deterministic) are summed; the queries whose rdma side moved nothing
 * over the engine (a device or the software provider) in any round are also summed apart (a cost the plugin has where it carries no bytes shows
 * there). Writes {@code rounds.md} and {@code rounds.csv}.
 */
final class RoundSummary {
    private RoundSummary() {
    }

    private static final Map<String, String> NAMES = Map.of("builtin", "built-in", "rdma", "rdma-shuffle");

    /**
     * The figures over the chosen queries: every round's totals, and the same seconds as {@link
     * BalancedPairs.Figures} for the pairs' arithmetic. As the side that goes first changes from query to
     * query within a round, a round's total has no single order; so the figures' rounds 2p and 2p+1
     * are pair p regrouped by order: 2p sums each query's run from whichever of the pair's two rounds
     * ran it in {@code BalancedPairs.order(SYSTEMS, 2p)}, 2p+1 its run in the reverse order. A pair's
     * sums, and so its ratio, are the same either way; the order effect then compares each side's
     * queries run second with the same queries run first.
     */
    record Totals(double[] builtinS, double[] rdmaS, BalancedPairs.Figures figures, int queries) {
        /** Each pair's ratio, rdma-shuffle over built-in, of the chosen queries' summed times. */
        List<Double> pairRatios() {
            return figures.pairRatios("rdma", "builtin");
        }

        BalancedPairs.Ratio ratio() {
            return BalancedPairs.ratio(pairRatios());
        }

        /** Each side's later-in-a-round over earlier-in-a-round, median over pairs. */
        Map<String, Double> orderEffect() {
            return figures.orderEffect();
        }
    }

    /** Totals over the queries (by position in each round's list) that {@code chosen} keeps. */
    static Totals totals(List<List<TpcdsRunner.Outcome>> rounds, IntPredicate chosen) {
        int n = rounds.getFirst().size();
        double[] b = new double[rounds.size()];
        double[] r = new double[rounds.size()];
        double[][] byOrder = new double[rounds.size()][2]; // [round of the figures][builtin, rdma]
        int counted = 0;
        for (int q = 0; q < n; q++) {
            if (!comparableInEvery(rounds, q) || !chosen.test(q)) {
                continue;
            }
            counted++;
            for (int k = 0; k < rounds.size(); k++) {
                TpcdsRunner.Outcome o = rounds.get(k).get(q);
                b[k] += o.builtinMs() / 1e3;
                r[k] += o.rdmaMs() / 1e3;
                int slot = slot(q, k);
                byOrder[slot][0] += o.builtinMs() / 1e3;
                byOrder[slot][1] += o.rdmaMs() / 1e3;
            }
        }
        List<Map<String, Double>> values = new ArrayList<>();
        for (double[] s : byOrder) {
            values.add(Map.of("builtin", s[0], "rdma", s[1]));
        }
        return new Totals(b, r, new BalancedPairs.Figures(TpcdsRunner.SYSTEMS, values), counted);
    }

    /**
     * Where round {@code k}'s run of query {@code q} goes in the figures: 2p when the round ran it in
     * the order {@code BalancedPairs.order} gives round 2p, 2p+1 when in the reverse.
     */
    private static int slot(int q, int k) {
        int p = k / 2;
        List<String> ran = TpcdsRunner.order(q, k);
        if (ran.equals(BalancedPairs.order(TpcdsRunner.SYSTEMS, 2 * p))) {
            return 2 * p;
        }
        if (ran.equals(BalancedPairs.order(TpcdsRunner.SYSTEMS, 2 * p + 1))) {
            return 2 * p + 1;
        }
        throw new IllegalStateException("query " + q + " ran in round " + k + " in an order pair " + p + " does not have: " + ran);
    }

    /** Each pair's ratio of one query, rdma-shuffle over built-in: the sum of its two runs over the built-in's two. */
    static List<Double> pairRatios(List<List<TpcdsRunner.Outcome>> rounds, int q) {
        List<Map<String, Double>> values = new ArrayList<>();
        for (List<TpcdsRunner.Outcome> round : rounds) {
            TpcdsRunner.Outcome o = round.get(q);
            values.add(Map.of("builtin", (double) o.builtinMs(), "rdma", (double) o.rdmaMs()));
        }
        return new BalancedPairs.Figures(TpcdsRunner.SYSTEMS, values).pairRatios("rdma", "builtin");
    }

    static void write(List<List<TpcdsRunner.Outcome>> rounds, double scale, String where, Path out) throws IOException {
        int n = rounds.getFirst().size();
        int pairs = rounds.size() / 2;
        Totals all = totals(rounds, q -> true);
        Totals noRdma = totals(rounds, q -> rounds.stream().allMatch(round -> round.get(q).rdma().rdmaBytes() == 0));
        StringBuilder md = new StringBuilder(String.format(Locale.ROOT, "TPC-DS scale %s (%s), %d queries, %s (%d rounds): in "
                + "every pair each query ran in both orders, built-in then rdma-shuffle in one round and rdma-shuffle then built-in "
                + "in the other, the order a pair starts with alternating from query to query and from pair to pair.%n%n", scale, where, n,
                pairs == 1 ? "1 pair" : pairs + " pairs", rounds.size()));
        String whole = all.queries() == 0 ? "no query comparable in every round"
                : "total time, rdma-shuffle / built-in: " + all.ratio().describe(all.queries() + " queries comparable in every "
                + "round; a pair's ratio is its two rounds' rdma-shuffle total over their built-in total") + "; "
                + BalancedPairs.describeOrderEffect(all.orderEffect(), NAMES);
        md.append(whole).append("\n\n");
        md.append("| over | queries | built-in s, each round | rdma-shuffle s, each round | ratio, each pair | median of the pairs (90% "
                + "interval) | order effect, built-in / rdma-shuffle |\n|---|---|---|---|---|---|---|\n");
        row(md, "all comparable queries", all);
        row(md, "queries that moved nothing over the engine", noRdma);
        md.append("\n| query | first, each round | built-in ms, each round | rdma-shuffle ms, each round | ratio, each pair | median "
                + "of the pairs | results |\n|---|---|---|---|---|---|---|\n");
        StringBuilder csv = new StringBuilder("query,round,pair,first,builtin_ms,rdma_ms,rdma_bytes_over_engine,verdict\n");
        for (int q = 0; q < n; q++) {
            long[] b = new long[rounds.size()];
            long[] r = new long[rounds.size()];
            List<String> first = new ArrayList<>();
            List<String> verdicts = new ArrayList<>();
            for (int k = 0; k < rounds.size(); k++) {
                TpcdsRunner.Outcome o = rounds.get(k).get(q);
                b[k] = o.builtinMs();
                r[k] = o.rdmaMs();
                String firstSide = TpcdsRunner.order(q, k).getFirst();
                first.add(NAMES.get(firstSide));
                if (!verdicts.contains(o.verdict())) {
                    verdicts.add(o.verdict());
                }
                csv.append(String.join(",", o.query(), Integer.toString(k + 1), Integer.toString(k / 2 + 1), firstSide,
                        Long.toString(o.builtinMs()), Long.toString(o.rdmaMs()), Long.toString(o.rdma().rdmaBytes()),
                        '"' + o.verdict() + '"')).append('\n');
            }
            List<Double> ratios = pairRatios(rounds, q);
            md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s |%n", rounds.getFirst().get(q).query(),
                    String.join(", ", first), join(b), join(r), ratios(ratios), twoPlaces(BalancedPairs.ratio(ratios).median()),
                    String.join("; ", verdicts)));
        }
        Files.writeString(out.resolve("rounds.md"), md);
        Files.writeString(out.resolve("rounds.csv"), csv);
        System.out.printf(Locale.ROOT, "%s (%d rounds): %s; pair ratios %s; queries that moved nothing over the engine (%d): %s; written %s%n",
                pairs == 1 ? "1 pair" : pairs + " pairs", rounds.size(), whole, ratios(all.pairRatios()), noRdma.queries(),
                noRdma.queries() == 0 ? "-" : noRdma.ratio().describe("pair ratios " + ratios(noRdma.pairRatios())),
                out.resolve("rounds.md"));
    }

    private static boolean comparableInEvery(List<List<TpcdsRunner.Outcome>> rounds, int q) {
        return rounds.stream().allMatch(round -> round.get(q).comparable());
    }

    private static void row(StringBuilder md, String over, Totals t) {
        if (t.queries() == 0) {
            md.append(String.format(Locale.ROOT, "| %s | 0 | - | - | - | - | - |%n", over));
            return;
        }
        BalancedPairs.Ratio ratio = t.ratio();
        String interval = Double.isNaN(ratio.low()) ? "no interval from one pair"
                : String.format(Locale.ROOT, "%.3f-%.3f", ratio.low(), ratio.high());
        Map<String, Double> effect = t.orderEffect();
        md.append(String.format(Locale.ROOT, "| %s | %d | %s | %s | %s | %s (%s) | %s / %s |%n", over, t.queries(), seconds(t.builtinS()),
                seconds(t.rdmaS()), ratios(t.pairRatios()), threePlaces(ratio.median()), interval, twoPlaces(effect.get("builtin")),
                twoPlaces(effect.get("rdma"))));
    }

    private static String ratios(List<Double> ratios) {
        StringBuilder b = new StringBuilder();
        for (double x : ratios) {
            b.append(b.isEmpty() ? "" : ", ").append(threePlaces(x));
        }
        return b.toString();
    }

    private static String threePlaces(double x) {
        return Double.isNaN(x) ? "-" : String.format(Locale.ROOT, "%.3f", x);
    }

    private static String twoPlaces(double x) {
        return Double.isNaN(x) ? "-" : String.format(Locale.ROOT, "%.2f", x);
    }

    private static String seconds(double[] s) {
        StringBuilder b = new StringBuilder();
        for (double x : s) {
            b.append(b.isEmpty() ? "" : ", ").append(String.format(Locale.ROOT, "%.1f", x));
        }
        return b.toString();
    }

    private static String join(long[] ms) {
        StringBuilder b = new StringBuilder();
        for (long x : ms) {
            b.append(b.isEmpty() ? "" : ", ").append(x);
        }
        return b.toString();
    }
}
