package org.rdmashuffle.benchmarks.cluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BiConsumer;
import org.rdmashuffle.benchmarks.PeriodicSampler;

/**
 * Where a cluster run's CPU goes, thread by thread: every second it reads, from {@code /proc}, the CPU
 * time (user + system) of every thread of every process of the run (those whose command line names the
 * run's directory: the Master, the Workers, the driver, the executors; the bed's hosts are network
 * namespaces, not PID namespaces, so this JVM sees them all) and the machine's busy time. Lined up with
 * the stage windows the driver prints ({@link org.rdmashuffle.benchmarks.spark.StageAccounting.Window}),
 * it says what each stage cost the machine's two cores and who spent it: the task threads, GC, the JIT,
 * the plugin's threads, Spark's block transfer, the other processes, and what is outside the run's
 * processes (the kernel's packet work in softirq, this JVM, anything else on the machine).
 *
 * <p>Threads: one sampling thread of its own (a daemon), started by {@link #start} and stopped by
 * {@link #close}; {@link #cpuDuring} may be called from any thread and reads the snapshots under the
 * sampler's lock. Resolution: the kernel's clock tick (10 ms); a thread that exits inside a window loses
 * its last second (its process's total still counts it, as "exited threads").
 */
public final class ThreadCpuSampler implements AutoCloseable {
    /** The clock ticks /proc counts CPU time in, per second (USER_HZ: 100 on Linux's x86-64 builds). */
    static final long TICKS_PER_SECOND = 100;
    private static final long PERIOD_MS = 1000;
    /** Snapshots kept at most (a snapshot a second: two hours, beyond ClusterJob's 90-minute bound); then sampling stops. */
    static final int MAX_SNAPSHOTS = 7200;

    /** One thread the sampler has seen: its process, the process's kind and the thread's group. */
    record ThreadKey(long pid, long tid, String processKind, String group) {
    }

    /** CPU ticks counted at one moment: the machine's busy and total ticks, each process's and each thread's. */
    record Snapshot(long atMs, long machineBusy, long machineTotal, Map<Long, Long> processes, Map<Long, Long> threads) {
    }

    private final String runDir;
    private final Map<Long, ThreadKey> threads = new HashMap<>(); // by pid << 32 | tid; guarded by this
    /** Each executor's Spark application (its {@code --app-id}), by pid; guarded by this. */
    private final Map<Long, String> applications = new HashMap<>();
    private final List<Snapshot> snapshots = new ArrayList<>(); // guarded by this
    private PeriodicSampler sampler; // set once by start, before anyone else sees this

    private ThreadCpuSampler(Path runDir) {
        this.runDir = runDir.toAbsolutePath().toString();
    }

    /** Starts sampling the processes whose command line names {@code runDir}. */
    public static ThreadCpuSampler start(Path runDir) {
        ThreadCpuSampler s = new ThreadCpuSampler(runDir);
        s.sampler = PeriodicSampler.start("thread-cpu-sampler", PERIOD_MS, s::sampleOnce, () -> s.snapshotCount() < MAX_SNAPSHOTS);
        return s;
    }

    private synchronized int snapshotCount() {
        return snapshots.size();
    }

    private void sampleOnce() {
        long at = System.currentTimeMillis();
        long[] machine = machineTicks();
        Map<Long, Long> processTicks = new HashMap<>();
        Map<Long, Long> threadTicks = new HashMap<>();
        Map<Long, ThreadKey> seen = new HashMap<>();
        Map<Long, String> apps = new HashMap<>();
        ProcessHandle.allProcesses().filter(h -> h.pid() != ProcessHandle.current().pid()).forEach(h -> {
            String command = h.info().commandLine().orElse("");
            if (!command.contains(runDir)) {
                return;
            }
            long pid = h.pid();
            String kind = processKind(command);
            String app = applicationOf(command);
            if (app != null) {
                apps.put(pid, app);
            }
            Long total = ticks(Path.of("/proc", Long.toString(pid), "stat"));
            if (total == null) {
                return; // ended meanwhile
            }
            processTicks.put(pid, total);
            try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc", Long.toString(pid), "task"))) {
                for (Path task : tasks) {
                    String stat = read(task.resolve("stat"));
                    if (stat == null) {
                        continue;
                    }
                    long tid = Long.parseLong(task.getFileName().toString());
                    long key = pid << 32 | tid;
                    threadTicks.put(key, ticksOf(stat));
                    seen.put(key, new ThreadKey(pid, tid, kind, group(commOf(stat))));
                }
            } catch (IOException e) {
                // the process ended between listing and reading: its total above is what it used
            }
        });
        synchronized (this) {
            seen.forEach(threads::putIfAbsent);
            apps.forEach(applications::putIfAbsent);
            snapshots.add(new Snapshot(at, machine[0], machine[1], processTicks, threadTicks));
        }
    }

    /**
     * The CPU seconds spent between {@code fromMs} and {@code toMs} (epoch), by where: each process kind's
     * threads by category ("executor: task threads"), each kind's exited threads, "outside the run's
     * processes" (the machine's busy time less the run's), and "machine busy" / "machine capacity" as
     * the frame. Measured between the last sample at or before {@code fromMs} and the first at or after
     * {@code toMs}, so a window is widened to whole sampling periods.
     */
    public synchronized Map<String, Double> cpuDuring(long fromMs, long toMs) {
        List<Snapshot> span = span(fromMs, toMs);
        return span.isEmpty() ? new TreeMap<>() : between(span.get(0), lastSeen(span), threads);
    }

    /** The snapshots from the last at or before {@code fromMs} to the first at or after {@code toMs}. */
    private List<Snapshot> span(long fromMs, long toMs) {
        int first = 0;
        int last = snapshots.size() - 1;
        for (int i = 0; i < snapshots.size(); i++) {
            if (snapshots.get(i).atMs() <= fromMs) {
                first = i;
            }
            if (snapshots.get(i).atMs() >= toMs) {
                last = i;
                break;
            }
        }
        return last < first ? List.of() : snapshots.subList(first, last + 1);
    }

    /**
     * The last snapshot of {@code span} with every process and thread that ended inside it kept at the
     * last count seen (what it used but its last second).
     */
    static Snapshot lastSeen(List<Snapshot> span) {
        Map<Long, Long> processes = new HashMap<>();
        Map<Long, Long> threadTicks = new HashMap<>();
        for (Snapshot s : span) {
            processes.putAll(s.processes());
            threadTicks.putAll(s.threads());
        }
        Snapshot last = span.get(span.size() - 1);
        return new Snapshot(last.atMs(), last.machineBusy(), last.machineTotal(), processes, threadTicks);
    }

    /** What {@link #cpuDuring} reports, from two snapshots and the threads seen (package-private for tests). */
    static Map<String, Double> between(Snapshot first, Snapshot last, Map<Long, ThreadKey> threads) {
        Map<String, Double> out = new TreeMap<>();
        if (first == null || last == null || last.atMs() <= first.atMs()) {
            return out;
        }
        long runTicks = 0;
        Map<Long, Long> liveByProcess = new HashMap<>();
        forEachThreadUsed(first, last, threads, (key, used) -> {
            out.merge(key.processKind() + ": " + category(key.processKind(), key.group()), seconds(used), Double::sum);
            liveByProcess.merge(key.pid(), used, Long::sum);
        });
        Map<Long, String> kinds = new HashMap<>();
        threads.values().forEach(k -> kinds.put(k.pid(), k.processKind()));
        for (Map.Entry<Long, Long> p : last.processes().entrySet()) {
            long used = p.getValue() - first.processes().getOrDefault(p.getKey(), 0L);
            runTicks += used;
            long exited = used - liveByProcess.getOrDefault(p.getKey(), 0L);
            if (exited > 0) {
                out.merge(kinds.getOrDefault(p.getKey(), "other") + ": exited threads", seconds(exited), Double::sum);
            }
        }
        long busy = last.machineBusy() - first.machineBusy();
        out.put("machine busy", seconds(busy));
        out.put("machine capacity", seconds(last.machineTotal() - first.machineTotal()));
        out.put("outside the run's processes", seconds(Math.max(0, busy - runTicks)));
        out.put("window s", (last.atMs() - first.atMs()) / 1000.0);
        return out;
    }

    /** Each thread that used CPU between two snapshots, with the ticks it used (a thread born since counts from 0). */
    private static void forEachThreadUsed(Snapshot first, Snapshot last, Map<Long, ThreadKey> threads,
                                          BiConsumer<ThreadKey, Long> use) {
        for (Map.Entry<Long, Long> t : last.threads().entrySet()) {
            ThreadKey key = threads.get(t.getKey());
            long used = t.getValue() - first.threads().getOrDefault(t.getKey(), 0L);
            if (key != null && used > 0) {
                use.accept(key, used);
            }
        }
    }

    /** The threads' groups the sampler saw in {@code processKind}'s processes, by CPU between two moments, largest first. */
    public synchronized Map<String, Double> groupsDuring(String processKind, long fromMs, long toMs) {
        List<Snapshot> span = span(fromMs, toMs);
        Map<String, Double> byGroup = new HashMap<>();
        if (!span.isEmpty()) {
            forEachThreadUsed(span.get(0), lastSeen(span), threads, (key, used) -> {
                if (key.processKind().equals(processKind)) {
                    byGroup.merge(key.group(), seconds(used), Double::sum);
                }
            });
        }
        Map<String, Double> sorted = new LinkedHashMap<>();
        byGroup.entrySet().stream().sorted(Map.Entry.<String, Double>comparingByValue().reversed())
                .forEach(e -> sorted.put(e.getKey(), e.getValue()));
        return sorted;
    }

    /**
     * The executors' CPU seconds between {@code fromMs} and {@code toMs} (epoch) by Spark application
     * (its id) and category ({@link #category}), live threads only: what share of an application's
     * executors the plugin's threads took, beside Spark's own block transfer. Windows as {@link #cpuDuring}.
     */
    public synchronized Map<String, Map<String, Double>> executorsByApplication(long fromMs, long toMs) {
        List<Snapshot> span = span(fromMs, toMs);
        return span.isEmpty() ? new TreeMap<>() : byApplication(span.get(0), lastSeen(span), threads, applications);
    }

    /** What {@link #executorsByApplication} reports, from two snapshots (package-private for tests). */
    static Map<String, Map<String, Double>> byApplication(Snapshot first, Snapshot last, Map<Long, ThreadKey> threads,
                                                          Map<Long, String> applications) {
        Map<String, Map<String, Double>> out = new TreeMap<>();
        if (first == null || last == null || last.atMs() <= first.atMs()) {
            return out;
        }
        forEachThreadUsed(first, last, threads, (key, used) -> {
            String app = applications.get(key.pid());
            if (key.processKind().equals("executor") && app != null) {
                out.computeIfAbsent(app, a -> new TreeMap<>()).merge(category(key.processKind(), key.group()), seconds(used),
                        Double::sum);
            }
        });
        return out;
    }

    /** The Spark application an executor's command line names ({@code --app-id ID}), or null. */
    static String applicationOf(String commandLine) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("--app-id (\\S+)").matcher(commandLine);
        return m.find() ? m.group(1) : null;
    }

    /** What a process of the run is, from its command line. */
    static String processKind(String commandLine) {
        if (commandLine.contains("CoarseGrainedExecutorBackend")) {
            return "executor";
        }
        if (commandLine.contains("org.apache.spark.deploy.worker.Worker")) {
            return "Worker";
        }
        if (commandLine.contains("org.apache.spark.deploy.master.Master")) {
            return "Master";
        }
        if (commandLine.contains("SparkSubmit")) {
            return "driver";
        }
        return "other";
    }

    /**
     * A thread's group: its name (the kernel keeps the first 15 characters of the JVM's) without the
     * numbers that tell a pool's threads apart ("GC Thread#1" and "GC Thread#0" are one group).
     */
    static String group(String comm) {
        return comm.replaceAll("[#-]?\\d+$", "").replaceAll("[#-]\\d+[#-]", "-").trim();
    }

    /** The category a group of threads belongs to: what the accounting is printed by. */
    static String category(String processKind, String group) {
        if (group.startsWith("Executor task")) { // "Executor task launch worker ...", cut to 15 characters
            return "task threads";
        }
        if (group.startsWith("GC Thread") || group.startsWith("G1 ") || group.equals("VM Thread")
                || group.startsWith("GC ") || group.startsWith("Parallel GC")) {
            return "GC and safepoints";
        }
        if (group.startsWith("C1 CompilerThre") || group.startsWith("C2 CompilerThre")) {
            return "JIT";
        }
        if (group.startsWith("rdma-")) {
            return "rdma-shuffle's threads";
        }
        if (group.startsWith("ForkJoinPool")) {
            return processKind.equals("executor") ? "virtual-thread carriers (rdma-shuffle's link and resend threads)"
                    : "virtual-thread carriers";
        }
        if (group.startsWith("shuffle-client") || group.startsWith("shuffle-server") || group.startsWith("block-manager")
                || group.startsWith("shuffle-block")) {
            return "Spark's block transfer (Netty)";
        }
        if (group.startsWith("java")) {
            return "main thread";
        }
        return "other threads";
    }

    private static String commOf(String stat) {
        int open = stat.indexOf('(');
        int close = stat.lastIndexOf(')');
        return open >= 0 && close > open ? stat.substring(open + 1, close) : "?";
    }

    /** utime + stime of a {@code /proc/.../stat} line: fields 14 and 15, counted after the command's closing parenthesis. */
    static long ticksOf(String stat) {
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }

    private static Long ticks(Path stat) {
        String s = read(stat);
        return s == null ? null : ticksOf(s);
    }

    /** The machine's busy and total ticks, summed over its CPUs, from the first line of /proc/stat. */
    private static long[] machineTicks() {
        String s = read(Path.of("/proc/stat"));
        if (s == null) {
            return new long[2];
        }
        String[] f = s.lines().findFirst().orElse("cpu").trim().split("\\s+");
        long busy = 0;
        long total = 0;
        for (int i = 1; i < f.length && i <= 8; i++) { // user nice system idle iowait irq softirq steal (guest is in user)
            long v = Long.parseLong(f[i]);
            total += v;
            if (i != 4 && i != 5) {
                busy += v;
            }
        }
        return new long[] {busy, total};
    }

    private static String read(Path p) {
        try {
            return Files.readString(p, StandardCharsets.US_ASCII);
        } catch (IOException | RuntimeException e) {
            return null; // gone: a process or thread that ended
        }
    }

    private static double seconds(long ticks) {
        return (double) ticks / TICKS_PER_SECOND;
    }

    @Override
    public void close() throws InterruptedException {
        sampler.stop(5000);
    }
}
