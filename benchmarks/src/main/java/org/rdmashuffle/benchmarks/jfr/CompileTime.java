package org.rdmashuffle.benchmarks.jfr;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordingFile;

import org.rdmashuffle.benchmarks.spark.StageAccounting;

/**
 * Whose code the JIT compiled, and for how long: sums the {@code jdk.Compilation} events of JFR
 * recordings (made by {@code bin/shuffle-job --profile}, which records every compilation) by the
 * compiled method's owner (rdma-shuffle, Spark, Scala, Netty, Kryo, the JDK, ...) and by the stage
 * window of the job's console each compilation started in (the console says which run, and so which
 * shuffle, a window belongs to); compilations outside every window are summed apart.
 *
 * <pre>
 *   CompileTime --console FILE DIR [DIR ...]
 * </pre>
 * Compile time is the compiler thread's wall time for the compilation, close to its CPU time on a
 * machine where the compiler threads are not starved; on a saturated machine it includes waiting to run.
 */
public final class CompileTime {
    /**
     * The JFR setting that records every JIT compilation with its duration (the profile settings keep
     * those over 100 ms only): on the bed the executors' compiler threads use about a third of their CPU,
     * and which code they compiled says whose that time is. Added by every {@code --profile}.
     */
    public static final String EVERY_COMPILATION = "jdk.Compilation#threshold=0ms";
    private static final int TOP_METHODS = 12;

    private CompileTime() {
    }

    public static void main(String[] args) throws IOException {
        List<Path> dirs = new ArrayList<>();
        List<String> console = null;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--console") && i + 1 < args.length) {
                console = Files.readAllLines(Path.of(args[++i]));
            } else {
                dirs.add(Path.of(args[i]));
            }
        }
        if (console == null || dirs.isEmpty()) {
            System.err.println("usage: CompileTime --console FILE DIR [DIR ...]");
            System.exit(2);
        }
        List<Map.Entry<String, StageAccounting.Window>> windows = StageAccounting.Window.allIn(console);
        Map<String, Map<String, Double>> byWindow = new LinkedHashMap<>();
        windows.forEach(w -> byWindow.put(name(w), new TreeMap<>()));
        Map<String, Double> outside = new TreeMap<>();
        Map<String, Map<String, Double>> methodsBySystem = new TreeMap<>();
        int files = 0;
        long compilations = 0;
        for (Path dir : dirs) {
            try (Stream<Path> list = Files.list(dir)) {
                for (Path f : list.filter(p -> p.toString().endsWith(".jfr")).sorted().toList()) {
                    files++;
                    for (RecordedEvent e : RecordingFile.readAllEvents(f)) {
                        if (!e.getEventType().getName().equals("jdk.Compilation")) {
                            continue;
                        }
                        compilations++;
                        RecordedMethod m = e.getValue("method");
                        String type = m == null ? "?" : m.getType().getName();
                        double seconds = e.getDuration().toNanos() / 1e9;
                        String owner = owner(type);
                        long at = e.getStartTime().toEpochMilli();
                        Map.Entry<String, StageAccounting.Window> in = windows.stream()
                                .filter(w -> at >= w.getValue().submittedMs() && at < w.getValue().completedMs()).findFirst().orElse(null);
                        if (in == null) {
                            outside.merge(owner, seconds, Double::sum);
                            continue;
                        }
                        byWindow.get(name(in)).merge(owner, seconds, Double::sum);
                        String system = StageAccounting.Window.systemOf(in.getKey());
                        methodsBySystem.computeIfAbsent(system, k -> new HashMap<>())
                                .merge(type + "." + (m == null ? "?" : m.getName()), seconds, Double::sum);
                    }
                }
            }
        }
        System.out.printf(Locale.ROOT, "%d recordings, %d compilations%n", files, compilations);
        byWindow.forEach((w, owners) -> print("  " + w, owners));
        print("  outside the stage windows (executor start, warm-up, between runs)", outside);
        methodsBySystem.forEach((system, methods) -> {
            System.out.println("  " + system + ": longest compilations inside the windows, by method (s):");
            methods.entrySet().stream().sorted(Map.Entry.<String, Double>comparingByValue().reversed()).limit(TOP_METHODS)
                    .forEach(e -> System.out.printf(Locale.ROOT, "    %.2f %s%n", e.getValue(), e.getKey()));
        });
    }

    private static String name(Map.Entry<String, StageAccounting.Window> w) {
        return w.getKey() + ", stage " + w.getValue().id() + " " + w.getValue().shortName();
    }

    private static void print(String title, Map<String, Double> owners) {
        StringBuilder b = new StringBuilder(title).append(String.format(Locale.ROOT, " (%.1f s):",
                owners.values().stream().mapToDouble(Double::doubleValue).sum()));
        owners.entrySet().stream().sorted(Map.Entry.<String, Double>comparingByValue().reversed())
                .forEach(e -> b.append(String.format(Locale.ROOT, " %s %.1f,", e.getKey(), e.getValue())));
        System.out.println(b);
    }

    /** Whose code a class is, by its package. */
    static String owner(String type) {
        if (type.startsWith("org.rdmashuffle.benchmarks.")) {
            return "the job";
        }
        if (type.startsWith("org.rdmashuffle.")) {
            return "rdma-shuffle";
        }
        if (type.startsWith("org.apache.spark.")) {
            return "Spark";
        }
        if (type.startsWith("scala.")) {
            return "Scala";
        }
        if (type.startsWith("io.netty.") || type.startsWith("org.sparkproject.io.netty.")) {
            return "Netty";
        }
        if (type.startsWith("com.esotericsoftware.")) {
            return "Kryo";
        }
        if (type.startsWith("java.") || type.startsWith("jdk.") || type.startsWith("sun.") || type.startsWith("javax.")) {
            return "JDK";
        }
        return "other";
    }
}
