package org.rdmashuffle.benchmarks.scale;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.management.JMException;
import javax.management.ObjectName;

/**
 * What {@link PeerScaleBenchmark} reads about its own JVM beyond the platform MXBeans: the resident set,
 * Native Memory Tracking (run the JVM with {@code -XX:NativeMemoryTracking=summary}; without it the NMT
 * figures are -1 and the texts say so), and the heap's class histogram -- through the diagnostic commands
 * {@code jcmd} would run ({@code VM.native_memory}, {@code GC.class_histogram}), called in process.
 * Called by the benchmark's main thread only.
 */
final class ServingJvm {
    private static final Pattern TOTAL = Pattern.compile("Total: reserved=(\\d+)KB, committed=(\\d+)KB");
    private static final Pattern HEAP = Pattern.compile("Java Heap \\(reserved=(\\d+)KB, committed=(\\d+)KB");
    private static final Pattern HISTOGRAM_ROW = Pattern.compile("^\\s*\\d+:\\s+(\\d+)\\s+(\\d+)\\s+(\\S+)");

    private ServingJvm() {
    }

    /** VmRSS of this process, or -1 where /proc is not there. */
    static long residentBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
        return -1;
    }

    /** NMT's committed bytes less the Java heap's committed bytes, or -1 when NMT is off. */
    static long nativeCommittedOutsideHeap() {
        String summary = command("vmNativeMemory", "summary");
        Matcher total = TOTAL.matcher(summary);
        Matcher heap = HEAP.matcher(summary);
        if (!total.find() || !heap.find()) {
            return -1;
        }
        return (Long.parseLong(total.group(2)) - Long.parseLong(heap.group(2))) * 1024;
    }

    /** Makes now the point NMT's {@link #nativeGrowth} is measured from. */
    static void nativeBaseline() {
        command("vmNativeMemory", "baseline");
    }

    /** NMT's totals and categories that grew or shrank since {@link #nativeBaseline}, one line each. */
    static String nativeGrowth() {
        String diff = command("vmNativeMemory", "summary.diff");
        StringBuilder out = new StringBuilder();
        for (String line : diff.split("\n")) {
            String t = line.strip();
            if ((t.startsWith("Total:") || t.startsWith("-")) && t.contains("committed=")
                    && t.matches(".*committed=\\d+KB [+-]\\d+KB.*")) {
                out.append("    ").append(t).append('\n');
            }
        }
        return out.length() == 0 ? "    (no change, or NMT off)\n" : out.toString();
    }

    /** Live objects by class: class name to {instances, bytes}, after a full GC (the histogram runs one). */
    static Map<String, long[]> classHistogram() {
        Map<String, long[]> rows = new HashMap<>();
        for (String line : command("gcClassHistogram").split("\n")) {
            Matcher m = HISTOGRAM_ROW.matcher(line);
            if (m.find()) {
                rows.merge(m.group(3), new long[] {Long.parseLong(m.group(1)), Long.parseLong(m.group(2))},
                        (x, y) -> new long[] {x[0] + y[0], x[1] + y[1]});
            }
        }
        return rows;
    }

    /** The {@code top} classes whose live bytes grew most from {@code before} to {@code after}, per peer. */
    static String histogramGrowth(Map<String, long[]> before, Map<String, long[]> after, int peers, int top) {
        List<Map.Entry<String, long[]>> grown = new ArrayList<>();
        after.forEach((name, a) -> {
            long[] b = before.getOrDefault(name, new long[2]);
            grown.add(Map.entry(name, new long[] {a[0] - b[0], a[1] - b[1]}));
        });
        grown.sort((x, y) -> Long.compare(y.getValue()[1], x.getValue()[1]));
        StringBuilder out = new StringBuilder();
        long total = grown.stream().mapToLong(e -> e.getValue()[1]).sum();
        out.append(String.format("    all classes: %+d bytes, %+.0f per peer%n", total, total / (double) peers));
        for (Map.Entry<String, long[]> e : grown.subList(0, Math.min(top, grown.size()))) {
            out.append(String.format("    %-90s %+9d objects %+11d bytes  %8.2f objects, %7.0f bytes per peer%n", e.getKey(),
                    e.getValue()[0], e.getValue()[1], e.getValue()[0] / (double) peers, e.getValue()[1] / (double) peers));
        }
        return out.toString();
    }

    /** Runs a diagnostic command (the DiagnosticCommand MBean's operation name) and returns its text. */
    private static String command(String operation, String... arguments) {
        try {
            Object out = ManagementFactory.getPlatformMBeanServer().invoke(new ObjectName("com.sun.management:type=DiagnosticCommand"),
                    operation, new Object[] {arguments}, new String[] {String[].class.getName()});
            return String.valueOf(out);
        } catch (JMException e) {
            return "";
        }
    }
}
