package org.rdmashuffle.benchmarks.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * What one run's executors held, in one place: their {@code /proc} figures ({@link ExecutorResources}),
 * what the storage read for them while the shuffle's reduce side ran against the bytes it read, Spark's
 * spill counts (its task metrics {@code memoryBytesSpilled} and {@code diskBytesSpilled}, summed over the
 * run's tasks), and, where the plugin carried the shuffle, its registered memory ({@link PluginGauges};
 * null: not asked for, as in a run of Spark's own shuffle; empty: no executor sent them). {@link #lines} prints a
 * run; {@link #medians} the per-system medians of a comparison. Public for {@link #bytes} and {@link #percent},
 * which the YARN bed's TeraSort runner prints its NodeManagers' figures with.
 *
 * @param storageReads bytes the storage read for the executors from the last reading before the first
 *                     stage that read the shuffle started to the first after the last one ended
 * @param shuffleRead  the bytes those stages read through the shuffle (Spark's {@code totalBytesRead})
 */
public record ResourceReport(List<ExecutorResources.Executor> executors, long storageReads, long shuffleRead, long spilledMemory,
                      long spilledDisk, Map<String, PluginGauges.Executor> registered) {
    private static final double GIB = 1L << 30;
    private static final double MIB = 1L << 20;

    /** From the executors' figures, the run's stages (those with shuffle bytes read are the reduce side) and windows. */
    static ResourceReport of(List<ExecutorResources.Executor> executors, List<StageAccounting.Stage> stages,
                             List<StageAccounting.Window> windows, long spilledMemory, long spilledDisk,
                             Map<String, PluginGauges.Executor> registered) {
        long shuffleRead = 0;
        long from = Long.MAX_VALUE;
        long to = Long.MIN_VALUE;
        for (StageAccounting.Stage s : stages) {
            if (s.bytesRead() > 0) {
                shuffleRead += s.bytesRead();
                for (StageAccounting.Window w : windows) {
                    if (w.id() == s.id()) {
                        from = Math.min(from, w.submittedMs());
                        to = Math.max(to, w.completedMs());
                    }
                }
            }
        }
        long storage = 0;
        if (from <= to) {
            for (ExecutorResources.Executor e : executors) {
                storage += e.storageReadsDuring(from, to);
            }
        }
        return new ResourceReport(executors, storage, shuffleRead, spilledMemory, spilledDisk, registered);
    }

    double pageCacheShare() {
        return ExecutorResources.pageCacheShare(storageReads, shuffleRead);
    }

    long largestPeakRss() {
        return executors.stream().mapToLong(ExecutorResources.Executor::peakRss).max().orElse(0);
    }

    long largestFileRss() {
        return executors.stream().mapToLong(ExecutorResources.Executor::fileRss).max().orElse(0);
    }

    long mostPinned() {
        return executors.stream().mapToLong(ExecutorResources.Executor::pinned).max().orElse(0);
    }

    long mostDescriptors() {
        return executors.stream().mapToLong(ExecutorResources.Executor::descriptors).max().orElse(0);
    }

    long mostMappings() {
        return executors.stream().mapToLong(ExecutorResources.Executor::mappings).max().orElse(0);
    }

    /** The most map-output bytes an executor had registered (sampled each second); -1 when not collected. */
    long mostRegistered() {
        return registered == null || registered.isEmpty() ? -1
                : registered.values().stream().mapToLong(PluginGauges.Executor::peakRegistered).max().orElse(0);
    }

    /** The most fetch-buffer bytes an executor had registered; -1 when not collected. */
    long mostFetchBuffers() {
        return registered == null || registered.isEmpty() ? -1
                : registered.values().stream().mapToLong(PluginGauges.Executor::peakFetchBuffers).max().orElse(0);
    }

    /** The run's lines, indented as the job prints a run's details: the resources, and the registered memory if collected. */
    List<String> lines() {
        List<String> out = new ArrayList<>();
        if (executors.isEmpty()) {
            out.add("    resources: no executor of the application visible from the driver (none sampled); spilled "
                    + bytes(spilledMemory) + " memory / " + bytes(spilledDisk) + " disk");
        } else {
            out.add(String.format(Locale.ROOT, "    resources: executors' peak RSS %s GiB (file-backed at most %s), pinned at most %s, "
                            + "fds max %,d, maps max %,d, storage reads %s of %s shuffle read (page cache served %s), "
                            + "spilled %s memory / %s disk",
                    each(ExecutorResources.Executor::peakRss), each(ExecutorResources.Executor::fileRss), bytes(mostPinned()),
                    mostDescriptors(), mostMappings(), bytes(storageReads), bytes(shuffleRead), percent(pageCacheShare()),
                    bytes(spilledMemory), bytes(spilledDisk)));
        }
        if (registered != null) {
            out.add(registered.isEmpty() ? "    registered: not collected, no executor sent the plugin's gauges (its metrics "
                    + "plugin, org.rdmashuffle.spark.RdmaShufflePlugin, loads through spark.plugins: the cluster bed's spark-defaults.conf "
                    + "sets it, local-cluster runs do not)"
                    : String.format(Locale.ROOT, "    registered (the plugin's gauges, by executor %s): map outputs at most %s MiB "
                            + "(sampled each second), fetch buffers %s MiB",
                    String.join("/", registered.keySet()),
                    join(registered.values().stream().mapToDouble(g -> g.peakRegistered() / MIB)),
                    join(registered.values().stream().mapToDouble(g -> g.peakFetchBuffers() / MIB))));
        }
        return out;
    }

    private String each(java.util.function.ToLongFunction<ExecutorResources.Executor> f) {
        return join(executors.stream().mapToDouble(e -> f.applyAsLong(e) / GIB));
    }

    private static String join(java.util.stream.DoubleStream values) {
        return String.join("/", values.mapToObj(v -> String.format(Locale.ROOT, "%.2f", v)).toList());
    }

    /**
     * The medians of each system's runs ({@code bySystem}: runs in the order the table lists the systems,
     * names as the table shows them): one row a system, each figure the median over its runs of the
     * run's figure (the largest executor's, for those per executor).
     */
    static String medians(Map<String, List<ResourceReport>> bySystem) {
        StringBuilder b = new StringBuilder("| shuffle | peak RSS, largest executor (GiB) | file-backed RSS (GiB) | pinned | fds | maps "
                + "| storage reads in the reduce stage | shuffle read | page cache served | spilled memory | spilled disk "
                + "| registered map outputs, peak (MiB) | fetch buffers (MiB) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (Map.Entry<String, List<ResourceReport>> e : bySystem.entrySet()) {
            List<ResourceReport> runs = e.getValue();
            b.append(String.format(Locale.ROOT, "| %s | %.2f | %.2f | %s | %,.0f | %,.0f | %s | %s | %s | %s | %s | %s | %s |%n", e.getKey(),
                    median(runs, r -> r.largestPeakRss() / GIB), median(runs, r -> r.largestFileRss() / GIB),
                    bytes(Math.round(median(runs, r -> r.mostPinned()))), median(runs, r -> r.mostDescriptors()),
                    median(runs, r -> r.mostMappings()), bytes(Math.round(median(runs, r -> r.storageReads()))),
                    bytes(Math.round(median(runs, r -> r.shuffleRead()))), percent(median(runs, ResourceReport::pageCacheShare)),
                    bytes(Math.round(median(runs, r -> r.spilledMemory()))), bytes(Math.round(median(runs, r -> r.spilledDisk()))),
                    mebibytes(median(runs, r -> r.mostRegistered())), mebibytes(median(runs, r -> r.mostFetchBuffers()))));
        }
        return b.toString();
    }

    private static double median(List<ResourceReport> runs, ToDoubleFunction<ResourceReport> f) {
        return BalancedPairs.median(runs.stream().map(r -> f.applyAsDouble(r)).toList());
    }

    private static String mebibytes(double bytes) {
        return bytes < 0 ? "-" : String.format(Locale.ROOT, "%.1f", bytes / MIB);
    }

    public static String percent(double share) {
        return Double.isNaN(share) ? "n/a" : String.format(Locale.ROOT, "%.0f%%", share * 100);
    }

    /** Bytes as the job prints them elsewhere (decimal units): 0 B, 812 B, 3.4 kB, 120.5 MB, 3.52 GB. */
    public static String bytes(long n) {
        if (n < 1_000) {
            return n + " B";
        }
        if (n < 1_000_000) {
            return String.format(Locale.ROOT, "%.1f kB", n / 1e3);
        }
        if (n < 1_000_000_000) {
            return String.format(Locale.ROOT, "%.1f MB", n / 1e6);
        }
        return String.format(Locale.ROOT, "%.2f GB", n / 1e9);
    }
}
