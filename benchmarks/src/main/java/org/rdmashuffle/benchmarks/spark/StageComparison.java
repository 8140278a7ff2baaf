package org.rdmashuffle.benchmarks.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Per-stage figures of runs compared side by side ({@code ShuffleJob --compare}): for each stage (by
 * its place in the run: the map stage, then the reduce stage) and each figure of {@link
 * StageAccounting#HEADERS}, every system's median over the rounds, and the median of the per-round
 * ratios of each system to the baseline of the same round. Stages are compared only where every run
 * has the same number of them (a run that recovered from a lost executor may have more).
 */
final class StageComparison {
    private StageComparison() {
    }

    /**
     * The table. {@code rounds} holds each round's stages by system; {@code baseline} names the system the
     * ratios are to; {@code names} gives each system's name in the table.
     */
    static String table(List<Map<String, List<StageAccounting.Stage>>> rounds, List<String> systems, String baseline,
                        Map<String, String> names) {
        int stages = rounds.getFirst().get(baseline).size();
        for (Map<String, List<StageAccounting.Stage>> round : rounds) {
            for (String s : systems) {
                if (round.get(s).size() != stages) {
                    return "per stage: not compared, the runs had different numbers of stages (a recovery re-ran some)\n";
                }
            }
        }
        int figures = StageAccounting.HEADERS.size();
        StringBuilder b = new StringBuilder("per stage, median of " + rounds.size() + " rounds (ratio: to the " + names.get(baseline)
                + " run of the same round, median):\n| stage | shuffle | tasks | " + String.join(" | ", StageAccounting.HEADERS)
                + " |\n|---|---|---|" + "---|".repeat(figures) + "\n");
        for (int k = 0; k < stages; k++) {
            StageAccounting.Stage first = rounds.getFirst().get(baseline).get(k);
            String stage = k + " " + first.shortName();
            for (String s : systems) {
                int sk = k;
                b.append("| ").append(stage).append(" | ").append(names.get(s)).append(" | ").append(first.tasks()).append(" |");
                for (int f = 0; f < figures; f++) {
                    int ff = f;
                    b.append(' ').append(median(rounds.stream().mapToDouble(r -> r.get(s).get(sk).figures()[ff]).toArray(), "%.0f"))
                            .append(" |");
                }
                b.append('\n');
                if (s.equals(baseline)) {
                    continue;
                }
                b.append("| ").append(stage).append(" | ").append(names.get(s)).append(" / ").append(names.get(baseline)).append(" | |");
                for (int f = 0; f < figures; f++) {
                    List<Double> ratios = new ArrayList<>();
                    for (Map<String, List<StageAccounting.Stage>> r : rounds) {
                        long base = r.get(baseline).get(k).figures()[f];
                        long mine = r.get(s).get(k).figures()[f];
                        if (base > 0) {
                            ratios.add((double) mine / base);
                        }
                    }
                    b.append(' ').append(ratios.isEmpty() ? "-" : median(ratios.stream().mapToDouble(d -> d).toArray(), "%.2f"))
                            .append(" |");
                }
                b.append('\n');
            }
        }
        return b.toString();
    }

    private static String median(double[] values, String format) {
        double[] v = values.clone();
        java.util.Arrays.sort(v);
        int n = v.length;
        double m = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
        return String.format(Locale.ROOT, format, m);
    }
}
