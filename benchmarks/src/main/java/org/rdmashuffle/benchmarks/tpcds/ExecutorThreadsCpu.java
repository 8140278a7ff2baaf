package org.rdmashuffle.benchmarks.tpcds;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What {@code benchmarks/tpcds.sh --hosts N --cpu-by-thread} writes at the end of a run: each
 * application's executors' CPU over the run (from {@link org.rdmashuffle.benchmarks.cluster.ThreadCpuSampler})
 * and the shares of its task threads, of the plugin's threads (named {@code rdma-*}, and the virtual
 * threads' carriers, which run the software provider's link watcher, resends and hellos) and of Spark's
 * Netty block transfer. An application is the plugin's when its executors ran threads of the plugin
 * (in a {@code --control} run neither did). No state: a function from the sampler's figures to lines.
 */
final class ExecutorThreadsCpu {
    static final String TASKS = "task threads";
    static final String PLUGIN = "rdma-shuffle's threads";
    static final String CARRIERS = "virtual-thread carriers (rdma-shuffle's link and resend threads)";
    static final String NETTY = "Spark's block transfer (Netty)";

    private ExecutorThreadsCpu() {
    }

    /** A markdown table, one row per application: its executors' CPU seconds and the shares of each kind of thread. */
    static List<String> table(Map<String, Map<String, Double>> byApplication) {
        List<String> lines = new ArrayList<>();
        lines.add("| application | which | executors' CPU s | task threads | rdma-shuffle's threads (with carriers) "
                + "| Spark's Netty block transfer |");
        lines.add("|---|---|---|---|---|---|");
        byApplication.forEach((app, cpu) -> {
            double total = cpu.values().stream().mapToDouble(Double::doubleValue).sum();
            double plugin = cpu.getOrDefault(PLUGIN, 0.0) + cpu.getOrDefault(CARRIERS, 0.0);
            lines.add(String.format(Locale.ROOT, "| %s | %s | %.1f | %s | %s (%.1f s) | %s (%.1f s) |", app,
                    cpu.getOrDefault(PLUGIN, 0.0) > 0 ? "rdma-shuffle" : "built-in", total, percent(cpu.getOrDefault(TASKS, 0.0), total),
                    percent(plugin, total), plugin, percent(cpu.getOrDefault(NETTY, 0.0), total), cpu.getOrDefault(NETTY, 0.0)));
        });
        return lines;
    }

    private static String percent(double part, double total) {
        return total <= 0 ? "-" : String.format(Locale.ROOT, "%.2f%%", 100 * part / total);
    }
}
