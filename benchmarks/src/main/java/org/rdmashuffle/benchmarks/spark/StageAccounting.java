package org.rdmashuffle.benchmarks.spark;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.StageInfo;

/**
 * Where a run's time went, stage by stage: each stage's duration (submitted to completed, as Spark's
 * UI shows it) and the sums of Spark's task metrics over its tasks (executor run time, CPU time, GC
 * time, deserialization, result serialization, shuffle write time, fetch wait, records and bytes). Only
 * stages submitted between {@link #begin} and {@link #end} are counted, so a warm-up job before and the
 * executors' reports after stay out. A listener: register it with {@code addSparkListener}; read it
 * once the listener bus is drained.
 */
public final class StageAccounting extends SparkListener {
    /** One stage (its attempts together): figures in ms unless named otherwise. */
    public record Stage(int id, String name, int tasks, long durationMs, long runMs, long cpuMs, long gcMs, long deserializeMs,
                        long serializeResultMs, long shuffleWriteMs, long fetchWaitMs, long recordsRead, long recordsWritten,
                        long bytesRead, long bytesWritten) {
        /** The figures compared between runs, in the order {@link #HEADERS} names them. */
        public long[] figures() {
            return new long[] {durationMs, runMs, cpuMs, gcMs, deserializeMs, serializeResultMs, shuffleWriteMs, fetchWaitMs,
                    recordsRead, recordsWritten, bytesRead, bytesWritten};
        }

        /** The stage's name as Spark gives it, without the call site: "groupByKey", "collect". */
        public String shortName() {
            int at = name.indexOf(" at ");
            return at < 0 ? name : name.substring(0, at);
        }
    }

    /**
     * When one stage ran (its attempts together), on the driver's wall clock in epoch ms: what a sampler
     * outside the driver on the same machine (the cluster bed's hosts share its clock) lines its samples up with.
     */
    public record Window(int id, String shortName, long submittedMs, long completedMs) {
        private static final String PREFIX = "stage window: ";

        /** One line naming the run it belongs to ("round 1 rdma"), read back by {@link #parse}. */
        public String line(String run) {
            return PREFIX + run + " | " + id + " " + shortName + " | " + submittedMs + " " + completedMs;
        }

        /** Every window {@code lines} (a job's console) holds, in order, each with the run it belongs to. */
        public static List<Map.Entry<String, Window>> allIn(List<String> lines) {
            List<Map.Entry<String, Window>> windows = new ArrayList<>();
            for (String line : lines) {
                Map.Entry<String, Window> w = parse(line);
                if (w != null) {
                    windows.add(w);
                }
            }
            return windows;
        }

        /** The shuffle a run named as {@code ShuffleJob --compare} names them ("round 2 rdma") ran: "rdma". */
        public static String systemOf(String run) {
            return run.replaceFirst("^round \\d+ ", "");
        }

        /** The run and window of a line written by {@link #line}, or null if {@code line} is not one. */
        public static Map.Entry<String, Window> parse(String line) {
            int at = line.indexOf(PREFIX);
            if (at < 0) {
                return null;
            }
            String[] parts = line.substring(at + PREFIX.length()).split(" \\| ");
            if (parts.length != 3) {
                throw new IllegalArgumentException("not a stage window line: " + line);
            }
            String[] stage = parts[1].split(" ", 2);
            String[] times = parts[2].trim().split(" ");
            return Map.entry(parts[0], new Window(Integer.parseInt(stage[0]), stage.length > 1 ? stage[1] : "",
                    Long.parseLong(times[0]), Long.parseLong(times[1])));
        }
    }

    /** Names of {@link Stage#figures()}. */
    public static final List<String> HEADERS = List.of("duration ms", "task run ms", "CPU ms", "GC ms", "deserialize ms",
            "result serialize ms", "shuffle write ms", "fetch wait ms", "records read", "records written", "shuffle bytes read",
            "shuffle bytes written");

    private final Map<Integer, Sums> stages = new ConcurrentHashMap<>();
    private volatile boolean recording;

    /** Counts stages submitted from now on; forgets those counted before. */
    public void begin() {
        stages.clear();
        recording = true;
    }

    /** Counts no stage submitted after now (tasks of those counted still are). */
    public void end() {
        recording = false;
    }

    /** The stages counted, in the order they were submitted. */
    public List<Stage> stages() {
        List<Stage> out = new ArrayList<>();
        stages.values().stream().sorted(Comparator.comparingLong((Sums s) -> s.submittedMs).thenComparingInt(s -> s.id))
                .forEach(s -> out.add(s.stage()));
        return out;
    }

    /** When each counted stage ran, in the order they were submitted (stages not completed left out). */
    public List<Window> windows() {
        List<Window> out = new ArrayList<>();
        stages.values().stream().sorted(Comparator.comparingLong((Sums s) -> s.submittedMs).thenComparingInt(s -> s.id))
                .forEach(s -> {
                    synchronized (s) {
                        if (s.submittedMs > 0 && s.completedMs >= s.submittedMs) {
                            out.add(new Window(s.id, s.stage().shortName(), s.submittedMs, s.completedMs));
                        }
                    }
                });
        return out;
    }

    @Override
    public void onStageSubmitted(SparkListenerStageSubmitted e) {
        if (recording) {
            StageInfo info = e.stageInfo();
            Sums s = stages.computeIfAbsent(info.stageId(), id -> new Sums(id, info.name()));
            synchronized (s) {
                long submitted = info.submissionTime().isDefined() ? (Long) info.submissionTime().get() : System.currentTimeMillis();
                s.submittedMs = s.submittedMs == 0 ? submitted : Math.min(s.submittedMs, submitted);
            }
        }
    }

    @Override
    public void onStageCompleted(SparkListenerStageCompleted e) {
        Sums s = stages.get(e.stageInfo().stageId());
        if (s != null && e.stageInfo().completionTime().isDefined()) {
            synchronized (s) {
                s.completedMs = Math.max(s.completedMs, (Long) e.stageInfo().completionTime().get());
            }
        }
    }

    @Override
    public void onTaskEnd(SparkListenerTaskEnd e) {
        Sums s = stages.get(e.stageId());
        TaskMetrics m = e.taskMetrics();
        if (s == null || m == null) {
            return;
        }
        synchronized (s) {
            s.tasks++;
            s.runMs += m.executorRunTime();
            s.cpuNs += m.executorCpuTime();
            s.gcMs += m.jvmGCTime();
            s.deserializeMs += m.executorDeserializeTime();
            s.serializeResultMs += m.resultSerializationTime();
            s.shuffleWriteNs += m.shuffleWriteMetrics().writeTime();
            s.fetchWaitMs += m.shuffleReadMetrics().fetchWaitTime();
            s.recordsRead += m.shuffleReadMetrics().recordsRead();
            s.recordsWritten += m.shuffleWriteMetrics().recordsWritten();
            s.bytesRead += m.shuffleReadMetrics().totalBytesRead();
            s.bytesWritten += m.shuffleWriteMetrics().bytesWritten();
        }
    }

    /** A table of {@code stages}, one line each, every figure of {@link #HEADERS}. */
    public static String table(List<Stage> stages) {
        StringBuilder b = new StringBuilder("| stage | tasks | " + String.join(" | ", HEADERS) + " |\n|---|---|"
                + "---|".repeat(HEADERS.size()) + "\n");
        for (Stage s : stages) {
            b.append(String.format(Locale.ROOT, "| %d %s | %d |", s.id(), s.shortName(), s.tasks()));
            for (long f : s.figures()) {
                b.append(' ').append(f).append(" |");
            }
            b.append('\n');
        }
        return b.toString();
    }

    /** {@code stage} as one line of tab-separated fields, read back by {@link #parse}. */
    public static String line(Stage stage) {
        StringBuilder b = new StringBuilder().append(stage.id()).append('\t').append(stage.name().replace('\t', ' ').replace('\n', ' '))
                .append('\t').append(stage.tasks());
        for (long f : stage.figures()) {
            b.append('\t').append(f);
        }
        return b.toString();
    }

    /** A stage written by {@link #line}. */
    public static Stage parse(String line) {
        String[] f = line.split("\t");
        if (f.length != 3 + HEADERS.size()) {
            throw new IllegalArgumentException("not a stage line (" + f.length + " fields): " + line);
        }
        long[] v = new long[HEADERS.size()];
        for (int i = 0; i < v.length; i++) {
            v[i] = Long.parseLong(f[3 + i]);
        }
        return new Stage(Integer.parseInt(f[0]), f[1], Integer.parseInt(f[2]), v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8],
                v[9], v[10], v[11]);
    }

    /** The sums of {@code stages}' figures, as one stage named {@code name} (its duration the sum of theirs). */
    public static Stage total(String name, List<Stage> stages) {
        long[] v = new long[HEADERS.size()];
        int tasks = 0;
        for (Stage s : stages) {
            tasks += s.tasks();
            long[] f = s.figures();
            for (int i = 0; i < v.length; i++) {
                v[i] += Math.max(0, f[i]);
            }
        }
        return new Stage(-1, name, tasks, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11]);
    }

    /** What one stage's tasks added up to so far; guarded by itself. */
    private static final class Sums {
        final int id;
        final String name;
        long submittedMs;
        long completedMs;
        int tasks;
        long runMs;
        long cpuNs;
        long gcMs;
        long deserializeMs;
        long serializeResultMs;
        long shuffleWriteNs;
        long fetchWaitMs;
        long recordsRead;
        long recordsWritten;
        long bytesRead;
        long bytesWritten;

        Sums(int id, String name) {
            this.id = id;
            this.name = name;
        }

        synchronized Stage stage() {
            long duration = completedMs >= submittedMs && submittedMs > 0 ? completedMs - submittedMs : -1;
            return new Stage(id, name, tasks, duration, runMs, cpuNs / 1_000_000, gcMs, deserializeMs, serializeResultMs,
                    shuffleWriteNs / 1_000_000, fetchWaitMs, recordsRead, recordsWritten, bytesRead, bytesWritten);
        }
    }
}
