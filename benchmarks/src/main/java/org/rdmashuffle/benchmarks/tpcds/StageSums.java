package org.rdmashuffle.benchmarks.tpcds;

import java.util.List;
import java.util.Locale;
import java.util.function.Predicate;

import org.rdmashuffle.benchmarks.spark.StageAccounting;
import org.rdmashuffle.benchmarks.spark.StageAccounting.Stage;

/**
 * Where each TPC-DS query's time went on each side ({@link StageAccounting}, per query): every stage
 * in {@code stages.csv}, the query's sums in results.md beside the built-in's, and totals over the
 * comparable queries, also over those that moved nothing over the engine (a cost the plugin has where it
 * carries no bytes shows there).
 */
final class StageSums {
    /** The figures shown per query: duration, task run, CPU, GC, deserialize, shuffle write, fetch wait. */
    private static final int[] SHOWN = {0, 1, 2, 3, 4, 6, 7};

    private StageSums() {
    }

    /** One query's sums, both sides, for the console. */
    static String line(TpcdsRunner.Outcome o) {
        Stage b = StageAccounting.total("built-in", o.builtinStages());
        Stage r = StageAccounting.total("rdma", o.rdmaStages());
        StringBuilder s = new StringBuilder(String.format(Locale.ROOT, "stages %d / %d, tasks %d / %d", o.builtinStages().size(),
                o.rdmaStages().size(), b.tasks(), r.tasks()));
        for (int f : SHOWN) {
            s.append(", ").append(StageAccounting.HEADERS.get(f)).append(' ').append(b.figures()[f]).append(" / ")
                    .append(r.figures()[f]);
        }
        return s.append(" (built-in / rdma)").toString();
    }

    /** Every stage of every query, both sides. */
    static String csv(List<TpcdsRunner.Outcome> outcomes) {
        StringBuilder b = new StringBuilder("query,shuffle,stage_id,stage_name,tasks");
        for (String h : StageAccounting.HEADERS) {
            b.append(',').append(h.replace(' ', '_'));
        }
        b.append('\n');
        for (TpcdsRunner.Outcome o : outcomes) {
            rows(b, o.query(), "builtin", o.builtinStages());
            rows(b, o.query(), "rdma", o.rdmaStages());
        }
        return b.toString();
    }

    private static void rows(StringBuilder b, String query, String shuffle, List<Stage> stages) {
        for (Stage s : stages) {
            b.append(query).append(',').append(shuffle).append(',').append(s.id()).append(",\"").append(s.shortName().replace('"', '\''))
                    .append("\",").append(s.tasks());
            for (long f : s.figures()) {
                b.append(',').append(f);
            }
            b.append('\n');
        }
    }

    /** Per query, the sums of both sides; then the totals. */
    static String markdown(List<TpcdsRunner.Outcome> outcomes) {
        StringBuilder b = new StringBuilder("Where the time went, per query: sums over the query's stages, built-in / rdma-shuffle "
                + "(stages.csv has every stage).\n\n| query | stages | tasks |");
        for (int f : SHOWN) {
            b.append(' ').append(StageAccounting.HEADERS.get(f)).append(" |");
        }
        b.append("\n|---|---|---|").append("---|".repeat(SHOWN.length)).append('\n');
        for (TpcdsRunner.Outcome o : outcomes) {
            Stage bs = StageAccounting.total("built-in", o.builtinStages());
            Stage rs = StageAccounting.total("rdma", o.rdmaStages());
            b.append("| ").append(o.query()).append(" | ").append(o.builtinStages().size()).append(" / ").append(o.rdmaStages().size())
                    .append(" | ").append(bs.tasks()).append(" / ").append(rs.tasks()).append(" |");
            for (int f : SHOWN) {
                b.append(' ').append(bs.figures()[f]).append(" / ").append(rs.figures()[f]).append(" |");
            }
            b.append('\n');
        }
        return b.append('\n').append(totals(outcomes)).toString();
    }

    /**
     * The sums over the comparable queries, and over those of them that moved nothing over the engine, with
     * ratios; then the stages of the comparable queries by what they do with the shuffle (a cost the
     * plugin adds where no shuffle code runs, in scans and broadcasts, is not the fetch's).
     */
    static String totals(List<TpcdsRunner.Outcome> outcomes) {
        StringBuilder b = new StringBuilder(total("all comparable queries", outcomes, o -> true)
                + total("comparable queries that moved nothing over the engine", outcomes, o -> o.rdma().rdmaBytes() == 0));
        List<TpcdsRunner.Outcome> comparable = outcomes.stream().filter(TpcdsRunner.Outcome::comparable).toList();
        for (Kind kind : Kind.values()) {
            Stage bs = StageAccounting.total("built-in", comparable.stream().flatMap(o -> o.builtinStages().stream())
                    .filter(kind::of).toList());
            Stage rs = StageAccounting.total("rdma", comparable.stream().flatMap(o -> o.rdmaStages().stream())
                    .filter(kind::of).toList());
            b.append(String.format(Locale.ROOT, "Stages that %s, built-in / rdma-shuffle (ratio): tasks %d / %d", kind.what,
                    bs.tasks(), rs.tasks()));
            for (int f : SHOWN) {
                b.append(", ").append(StageAccounting.HEADERS.get(f)).append(' ').append(bs.figures()[f]).append(" / ")
                        .append(rs.figures()[f]).append(" (").append(ratio(rs.figures()[f], bs.figures()[f])).append(')');
            }
            b.append(".\n");
        }
        return b.toString();
    }

    /** What a stage does with the shuffle. */
    private enum Kind {
        NEITHER("neither read nor write the shuffle (scans, broadcasts, results)"),
        WRITE("write the shuffle only (map stages)"),
        READ("read the shuffle only"),
        BOTH("read and write the shuffle");

        final String what;

        Kind(String what) {
            this.what = what;
        }

        boolean of(Stage s) {
            boolean w = s.bytesWritten() > 0;
            boolean r = s.bytesRead() > 0;
            return this == (w && r ? BOTH : w ? WRITE : r ? READ : NEITHER);
        }
    }

    private static String total(String what, List<TpcdsRunner.Outcome> outcomes, Predicate<TpcdsRunner.Outcome> which) {
        List<TpcdsRunner.Outcome> chosen = outcomes.stream().filter(TpcdsRunner.Outcome::comparable).filter(which).toList();
        Stage b = StageAccounting.total("built-in", chosen.stream().flatMap(o -> o.builtinStages().stream()).toList());
        Stage r = StageAccounting.total("rdma", chosen.stream().flatMap(o -> o.rdmaStages().stream()).toList());
        long bMs = chosen.stream().mapToLong(TpcdsRunner.Outcome::builtinMs).sum();
        long rMs = chosen.stream().mapToLong(TpcdsRunner.Outcome::rdmaMs).sum();
        StringBuilder s = new StringBuilder(String.format(Locale.ROOT, "Sums over the %d %s, built-in / rdma-shuffle (ratio): "
                + "query time %d / %d ms (%s), tasks %d / %d", chosen.size(), what, bMs, rMs, ratio(rMs, bMs), b.tasks(), r.tasks()));
        for (int f : SHOWN) {
            s.append(", ").append(StageAccounting.HEADERS.get(f)).append(' ').append(b.figures()[f]).append(" / ")
                    .append(r.figures()[f]).append(" (").append(ratio(r.figures()[f], b.figures()[f])).append(')');
        }
        return s.append(".\n").toString();
    }

    private static String ratio(long mine, long base) {
        return base == 0 ? "-" : String.format(Locale.ROOT, "%.3f", (double) mine / base);
    }
}
