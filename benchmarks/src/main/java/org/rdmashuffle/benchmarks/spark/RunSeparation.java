package org.rdmashuffle.benchmarks.spark;

import java.io.IOException;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * What stands between two runs of a comparison ({@code ShuffleJob --compare}): the next run starts only
 * once every executor of the previous application has exited and what the machine wrote is on disk, so a
 * run never shares the CPU with the last one's dying JVMs or pays for its write-back. Stopping a Spark
 * context does not wait for either: the cluster manager kills the executors after it returns, and the
 * page cache writes back when it likes.
 *
 * <p>The executors are found by their command line ({@code CoarseGrainedExecutorBackend ... --app-id ID}):
 * in local-cluster mode and on the cluster and YARN beds (network namespaces, one process table) the driver
 * sees them all. A driver that sees none (on another machine than its executors) says so instead of waiting.
 *
 * <p>The YARN bed's TeraSort runner ({@code cluster.TeraSortJob}) separates its MapReduce runs the same way,
 * through {@link #ofProcesses}: the processes of an application's containers, found by its caller.
 */
public final class RunSeparation {
    /** How long an executor may take to go once its application stopped; past it the comparison stops. */
    private static final long EXIT_LIMIT_NANOS = TimeUnit.MINUTES.toNanos(2);

    private final String appId;
    private final String kind;
    private final List<ProcessHandle> executors;

    private RunSeparation(String appId, String kind, List<ProcessHandle> executors) {
        this.appId = appId;
        this.kind = kind;
        this.executors = executors;
    }

    /** Notes the executors of {@code appId} while it runs: once it stops they may be gone before anyone looks. */
    static RunSeparation watch(String appId) {
        return new RunSeparation(appId, "executors", executorsOf(appId));
    }

    /**
     * What to wait for before the next run: {@code processes} of application {@code appId}, which the caller
     * found ({@code kind} names them in the line {@link #await} returns, e.g. "container processes").
     */
    public static RunSeparation ofProcesses(String appId, String kind, List<ProcessHandle> processes) {
        return new RunSeparation(appId, kind, List.copyOf(processes));
    }

    /** The executors of application {@code appId} this process can see: their process handles. */
    static List<ProcessHandle> executorsOf(String appId) {
        return ProcessHandle.allProcesses()
                .filter(p -> commandLine(p).map(c -> isExecutorOf(c, appId)).orElse(false))
                .toList();
    }

    /**
     * A process's whole command line, its arguments separated by spaces: {@code /proc/<pid>/cmdline}'s where
     * there is one (the JDK's {@code ProcessHandle.Info} stops at 4,096 bytes: a local-cluster executor's
     * class path alone is longer, and its {@code --app-id} comes after it), else the JDK's.
     */
    public static java.util.Optional<String> commandLine(ProcessHandle p) {
        try {
            byte[] raw = java.nio.file.Files.readAllBytes(java.nio.file.Path.of("/proc", Long.toString(p.pid()), "cmdline"));
            if (raw.length > 0) {
                return java.util.Optional.of(new String(raw, java.nio.charset.StandardCharsets.UTF_8).replace('\0', ' ').strip());
            }
        } catch (IOException | RuntimeException e) {
            // no /proc here, or the process is gone: the JDK's view
        }
        return p.info().commandLine();
    }

    /** Whether {@code commandLine} is an executor JVM of application {@code appId}. */
    static boolean isExecutorOf(String commandLine, String appId) {
        return commandLine.contains("CoarseGrainedExecutorBackend") // YARN's is YarnCoarseGrainedExecutorBackend
                && (commandLine.contains("--app-id " + appId + " ") || commandLine.endsWith("--app-id " + appId));
    }

    /**
     * Waits until the executors seen by {@link #watch} have exited, then syncs the file systems; the line
     * that says what it waited for. Throws when an executor is still there after 2 minutes.
     */
    public String await() throws InterruptedException, IOException {
        long start = System.nanoTime();
        for (ProcessHandle p : executors) {
            long left = EXIT_LIMIT_NANOS - (System.nanoTime() - start);
            try {
                p.onExit().get(Math.max(0, left), TimeUnit.NANOSECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                throw new IllegalStateException("process " + p.pid() + " (" + kind + ") of " + appId
                        + " still running 2 minutes after its application stopped");
            } catch (java.util.concurrent.ExecutionException e) {
                throw new IllegalStateException(e);
            }
        }
        long exited = System.nanoTime();
        Process sync = new ProcessBuilder("sync").inheritIO().start();
        if (!sync.waitFor(5, TimeUnit.MINUTES) || sync.exitValue() != 0) {
            sync.destroyForcibly();
            throw new IllegalStateException("sync did not finish in 5 minutes (or failed) after " + appId);
        }
        long synced = System.nanoTime();
        return String.format(Locale.ROOT, "    between runs: %s, then sync %.1f s",
                executors.isEmpty() ? "no " + kind + " of " + appId + " visible from here (not waited for)"
                        : executors.size() + " " + kind + " of " + appId + " exited " + String.format(Locale.ROOT, "%.1f s", (exited - start) / 1e9)
                        + " after it stopped",
                (synced - exited) / 1e9);
    }
}
