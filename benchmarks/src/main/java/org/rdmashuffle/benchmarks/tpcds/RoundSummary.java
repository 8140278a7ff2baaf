package org.rdmashuffle.benchmarks.tpcds;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * A TPC-DS run of several rounds, summed up: every round's times for every query (nothing dropped),
 * each round's totals and ratio, and per query the median of its rounds on each side. Only queries
 * comparable in every round (identical, empty on both or not deterministic) are summed; the queries
 * whose rdma side moved nothing over RDMA in any round are also summed apart (a cost the plugin has
 * where it carries no bytes shows there). Writes {@code rounds.md} and {@code rounds.csv}.
 */
final class RoundSummary {
    private RoundSummary() {
    }

    /** The figures over all rounds: every round's totals, and the totals of the per-query medians. */
    record Totals(double[] builtinS, double[] rdmaS, double builtinMedianS, double rdmaMedianS, int queries) {
        double[] roundRatios() {
            double[] r = new double[builtinS.length];
            for (int i = 0; i < r.length; i++) {
                r[i] = rdmaS[i] / builtinS[i];
            }
            return r;
        }

        double medianRatio() {
            return rdmaMedianS / builtinMedianS;
        }
    }

    /** Totals over the queries (by position in each round's list) that {@code chosen} keeps. */
    static Totals totals(List<List<TpcdsRunner.Outcome>> rounds, java.util.function.IntPredicate chosen) {
        int n = rounds.getFirst().size();
        double[] b = new double[rounds.size()];
        double[] r = new double[rounds.size()];
        double bMedian = 0;
        double rMedian = 0;
        int counted = 0;
        for (int q = 0; q < n; q++) {
            if (!comparableInEvery(rounds, q) || !chosen.test(q)) {
                continue;
            }
            counted++;
            long[] bq = new long[rounds.size()];
            long[] rq = new long[rounds.size()];
            for (int k = 0; k < rounds.size(); k++) {
                TpcdsRunner.Outcome o = rounds.get(k).get(q);
                bq[k] = o.builtinMs();
                rq[k] = o.rdmaMs();
                b[k] += o.builtinMs() / 1e3;
                r[k] += o.rdmaMs() / 1e3;
            }
            bMedian += median(bq) / 1e3;
            rMedian += median(rq) / 1e3;
        }
        return new Totals(b, r, bMedian, rMedian, counted);
    }

    static void write(List<List<TpcdsRunner.Outcome>> rounds, double scale, String where, Path out) throws IOException {
        int n = rounds.getFirst().size();
        Totals all = totals(rounds, q -> true);
        Totals noRdma = totals(rounds, q -> rounds.stream().allMatch(round -> round.get(q).rdma().rdmaBytes() == 0));
        StringBuilder md = new StringBuilder(String.format(Locale.ROOT, "TPC-DS scale %s (%s), %d queries, %d rounds.%n%n", scale,
                where, n, rounds.size()));
        md.append("| over | queries | built-in s, each round | rdma-shuffle s, each round | ratio, each round | "
                + "sums of per-query medians, built-in / rdma | ratio of those |\n|---|---|---|---|---|---|---|\n");
        row(md, "all comparable queries", all);
        row(md, "queries that moved nothing over RDMA", noRdma);
        md.append("\n| query | built-in ms, each round | rdma-shuffle ms, each round | median ratio | results |\n|---|---|---|---|---|\n");
        StringBuilder csv = new StringBuilder("query,round,builtin_ms,rdma_ms,rdma_bytes_over_rdma,verdict\n");
        for (int q = 0; q < n; q++) {
            long[] b = new long[rounds.size()];
            long[] r = new long[rounds.size()];
            List<String> verdicts = new ArrayList<>();
            for (int k = 0; k < rounds.size(); k++) {
                TpcdsRunner.Outcome o = rounds.get(k).get(q);
                b[k] = o.builtinMs();
                r[k] = o.rdmaMs();
                if (!verdicts.contains(o.verdict())) {
                    verdicts.add(o.verdict());
                }
                csv.append(String.join(",", o.query(), Integer.toString(k + 1), Long.toString(o.builtinMs()), Long.toString(o.rdmaMs()),
                        Long.toString(o.rdma().rdmaBytes()), '"' + o.verdict() + '"')).append('\n');
            }
            md.append(String.format(Locale.ROOT, "| %s | %s | %s | %.2f | %s |%n", rounds.getFirst().get(q).query(), join(b), join(r),
                    median(r) / Math.max(1.0, median(b)), String.join("; ", verdicts)));
        }
        Files.writeString(out.resolve("rounds.md"), md);
        Files.writeString(out.resolve("rounds.csv"), csv);
        System.out.printf(Locale.ROOT, "%d rounds: per round ratio %s; sums of per-query medians %.1f s / %.1f s, ratio %.3f "
                        + "(queries that moved nothing over RDMA: %.3f over %d queries); written %s%n", rounds.size(),
                Arrays.toString(Arrays.stream(all.roundRatios()).mapToObj(x -> String.format(Locale.ROOT, "%.3f", x)).toArray()),
                all.builtinMedianS(), all.rdmaMedianS(), all.medianRatio(), noRdma.medianRatio(), noRdma.queries(),
                out.resolve("rounds.md"));
    }

    private static boolean comparableInEvery(List<List<TpcdsRunner.Outcome>> rounds, int q) {
        return rounds.stream().allMatch(round -> round.get(q).comparable());
    }

    private static void row(StringBuilder md, String over, Totals t) {
        StringBuilder ratios = new StringBuilder();
        for (double x : t.roundRatios()) {
            ratios.append(ratios.isEmpty() ? "" : ", ").append(String.format(Locale.ROOT, "%.3f", x));
        }
        md.append(String.format(Locale.ROOT, "| %s | %d | %s | %s | %s | %.1f / %.1f | %.3f |%n", over, t.queries(), seconds(t.builtinS()),
                seconds(t.rdmaS()), ratios, t.builtinMedianS(), t.rdmaMedianS(), t.medianRatio()));
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

    /** The median; for an even count the mean of the middle two. */
    static double median(long[] values) {
        long[] v = values.clone();
        Arrays.sort(v);
        int m = v.length / 2;
        return v.length % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2.0;
    }
}
