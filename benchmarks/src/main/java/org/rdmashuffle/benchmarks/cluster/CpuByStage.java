package org.rdmashuffle.benchmarks.cluster;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.rdmashuffle.benchmarks.spark.BalancedPairs;
import org.rdmashuffle.benchmarks.spark.StageAccounting;

/**
 * {@code bin/shuffle-job --hosts N --cpu-by-thread}: each stage's CPU on the whole machine, by who
 * spent it ({@link ThreadCpuSampler}), printed per run and, over {@code --compare} rounds, as the
 * median of each shuffle's rounds side by side. On a bed whose hosts share two cores, a stage's duration
 * is bounded below by the CPU everything spends in it over two; this says where that CPU went.
 */
final class CpuByStage {
    private static final int TOP_GROUPS = 10;

    private CpuByStage() {
    }

    /** Prints the accounting of every stage window in {@code driverOutput}. */
    static void print(ThreadCpuSampler sampler, List<String> driverOutput, PrintStream out) {
        // run ("round 1 rdma") -> stage ("1 collect") -> where -> seconds
        Map<String, Map<String, Map<String, Double>>> byRun = new LinkedHashMap<>();
        out.println();
        out.println("CPU by stage and thread, the whole machine (seconds of CPU; from /proc, sampled every second):");
        for (Map.Entry<String, StageAccounting.Window> w : StageAccounting.Window.allIn(driverOutput)) {
            StageAccounting.Window window = w.getValue();
            Map<String, Double> cpu = sampler.cpuDuring(window.submittedMs(), window.completedMs());
            String stage = window.id() + " " + window.shortName();
            byRun.computeIfAbsent(w.getKey(), r -> new LinkedHashMap<>()).put(stage, cpu);
            out.printf(Locale.ROOT, "  %s, stage %s: %.1f s (sampled over %.0f s), machine busy %.1f of %.1f s%n", w.getKey(), stage,
                    (window.completedMs() - window.submittedMs()) / 1000.0, cpu.getOrDefault("window s", 0.0),
                    cpu.getOrDefault("machine busy", 0.0), cpu.getOrDefault("machine capacity", 0.0));
            StringBuilder b = new StringBuilder("    ");
            cpu.forEach((where, s) -> {
                if (!where.startsWith("machine") && !where.equals("window s") && s >= 0.05) {
                    b.append(String.format(Locale.ROOT, "%s %.1f; ", where, s));
                }
            });
            out.println(b);
            StringBuilder g = new StringBuilder("    executor thread groups:");
            sampler.groupsDuring("executor", window.submittedMs(), window.completedMs()).entrySet().stream().limit(TOP_GROUPS)
                    .forEach(e -> g.append(String.format(Locale.ROOT, " %s %.1f,", e.getKey(), e.getValue())));
            out.println(g);
        }
        printMedians(byRun, out);
    }

    /** Per stage and shuffle, the median of the rounds' seconds for every place CPU went. */
    private static void printMedians(Map<String, Map<String, Map<String, Double>>> byRun, PrintStream out) {
        Map<String, List<Map<String, Map<String, Double>>>> bySystem = new LinkedHashMap<>(); // "rdma" -> rounds
        for (Map.Entry<String, Map<String, Map<String, Double>>> run : byRun.entrySet()) {
            String system = StageAccounting.Window.systemOf(run.getKey());
            bySystem.computeIfAbsent(system, s -> new ArrayList<>()).add(run.getValue());
        }
        if (bySystem.size() < 2) {
            return;
        }
        Set<String> stages = new LinkedHashSet<>();
        Set<String> places = new TreeSet<>();
        bySystem.values().forEach(rounds -> rounds.forEach(round -> round.forEach((stage, cpu) -> {
            stages.add(stage);
            places.addAll(cpu.keySet());
        })));
        List<String> systems = new ArrayList<>(bySystem.keySet());
        out.println();
        out.println("CPU by stage and thread, median of each shuffle's rounds (seconds of CPU):");
        StringBuilder header = new StringBuilder("| where |");
        StringBuilder rule = new StringBuilder("|---|");
        for (String stage : stages) {
            for (String system : systems) {
                header.append(' ').append(stage).append(", ").append(system).append(" |");
                rule.append("---|");
            }
        }
        out.println(header);
        out.println(rule);
        for (String place : places) {
            StringBuilder row = new StringBuilder("| " + place + " |");
            for (String stage : stages) {
                for (String system : systems) {
                    List<Double> values = new ArrayList<>();
                    bySystem.get(system).forEach(round -> values.add(round.getOrDefault(stage, Map.of()).getOrDefault(place, 0.0)));
                    row.append(String.format(Locale.ROOT, " %.1f |", BalancedPairs.median(values))); // a round or more each
                }
            }
            out.println(row);
        }
    }
}
