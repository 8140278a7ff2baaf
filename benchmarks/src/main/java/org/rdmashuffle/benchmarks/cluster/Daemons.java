package org.rdmashuffle.benchmarks.cluster;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The long-running processes of one cluster on the bed (a Master and Workers, a ResourceManager and
 * NodeManagers), each started inside its host with its output in {@code logs/<name>.log}, and stopped
 * together: TERM in reverse order of start (so a Worker or NodeManager stops what it launched), then
 * KILL for what outlives its grace time (counted from the TERM) or, sooner, for a daemon whose log says
 * that what matters of its stop is done.
 */
final class Daemons implements AutoCloseable {
    private final Path logs;
    private final String kind;
    private final long graceSeconds;
    private final List<Process> started = new ArrayList<>();
    private final Map<String, Process> byName = new java.util.HashMap<>();
    private final Map<Process, Long> graceOf = new java.util.HashMap<>();
    private final Map<Process, java.util.function.Predicate<String>> stoppedOf = new java.util.HashMap<>();
    private final Map<Process, Path> logOf = new java.util.HashMap<>();

    /** @param kind what the daemons are, for messages ("Spark", "YARN") */
    Daemons(Path logs, String kind, long graceSeconds) {
        this.logs = logs;
        this.kind = kind;
        this.graceSeconds = graceSeconds;
    }

    void start(ClusterBed.Host host, String name, List<String> command, Map<String, String> env) throws IOException {
        start(host, name, command, env, graceSeconds);
    }

    /**
     * As {@link #start(ClusterBed.Host, String, List, Map)}, with its own grace time after TERM: for a
     * daemon whose stop, past the part that matters, only waits out timers of its own.
     */
    void start(ClusterBed.Host host, String name, List<String> command, Map<String, String> env, long graceSeconds)
            throws IOException {
        start(host, name, command, env, graceSeconds, null);
    }

    /**
     * As {@link #start(ClusterBed.Host, String, List, Map, long)}; at the close, once {@code stopped} holds
     * for the text of its log (what it says when the part of its stop that matters is done), the daemon
     * is killed at once rather than at the end of its grace time: the rest of its stop only waits out
     * timers of its own.
     */
    void start(ClusterBed.Host host, String name, List<String> command, Map<String, String> env, long graceSeconds,
            java.util.function.Predicate<String> stopped) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(host.command(command)).redirectErrorStream(true)
                .redirectOutput(logs.resolve(name + ".log").toFile());
        pb.environment().putAll(env);
        Process p = pb.start();
        started.add(p);
        byName.put(name, p);
        graceOf.put(p, graceSeconds);
        if (stopped != null) {
            stoppedOf.put(p, stopped);
            logOf.put(p, logs.resolve(name + ".log"));
        }
    }

    /** Sends daemon {@code name} signal {@code signal} (as {@code kill -s}), e.g. PWR to decommission a Worker. */
    void signal(String name, String signal) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-s", signal, Long.toString(daemon(name).pid())).inheritIO().start();
        if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            throw new IOException("kill -s " + signal + " " + name + " failed");
        }
    }

    /**
     * The JVM of daemon {@code name}: the process started ({@code ip netns exec} replaces itself with the
     * command), or its descendant running {@code mainClass} where something stayed in between.
     */
    ProcessHandle jvm(String name, String mainClass) {
        Process p = daemon(name);
        if (org.rdmashuffle.benchmarks.spark.RunSeparation.commandLine(p.toHandle()).map(c -> c.contains(mainClass)).orElse(false)) {
            return p.toHandle();
        }
        return p.descendants().filter(d -> org.rdmashuffle.benchmarks.spark.RunSeparation.commandLine(d)
                        .map(c -> c.contains(mainClass)).orElse(false)).findFirst()
                .orElseThrow(() -> new IllegalStateException("daemon " + name + " (pid " + p.pid() + ") runs no " + mainClass));
    }

    private Process daemon(String name) {
        Process p = byName.get(name);
        if (p == null) {
            throw new IllegalArgumentException("no daemon " + name + " was started: " + byName.keySet());
        }
        return p;
    }

    /**
     * Waits until {@code done} holds for the text of {@code logs/<logName>} (read every 250 ms), at most
     * {@code seconds}; returns whether it did.
     */
    boolean awaitLog(String logName, java.util.function.Predicate<String> done, long seconds) throws IOException,
            InterruptedException {
        Path log = logs.resolve(logName);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!done.test(Files.exists(log) ? Files.readString(log) : "")) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(250);
        }
        return true;
    }

    /**
     * Kills daemon {@code name} at once (KILL: no shutdown hook, no goodbye to anyone), as a crashed
     * machine or an OOM killer would; what it launched keeps running. Waits (bounded) until it is gone.
     */
    void kill(String name) throws InterruptedException {
        Process p = daemon(name);
        p.destroyForcibly();
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException(name + " still runs 30 s after KILL");
        }
    }

    /**
     * Waits until {@code logs/<logName>} names {@code expected} distinct members ({@code registered}'s
     * first group), at most {@code seconds}; fails at once if a daemon exits meanwhile.
     *
     * @param what who registers with whom, for the message ("Workers registered with the Master")
     */
    void awaitRegistered(String logName, Pattern registered, int expected, long seconds, String what) throws IOException,
            InterruptedException {
        Path log = logs.resolve(logName);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            for (Process p : started) {
                if (!p.isAlive()) {
                    throw new IOException("a " + kind + " daemon exited while the cluster started (exit " + p.exitValue()
                            + "); see the logs in " + logs);
                }
            }
            Set<String> members = new HashSet<>();
            Matcher m = registered.matcher(Files.exists(log) ? Files.readString(log) : "");
            while (m.find()) {
                members.add(m.group(1));
            }
            if (members.size() >= expected) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IOException(members.size() + " of " + expected + " " + what + " in " + seconds + " s; see the logs in "
                        + logs);
            }
            Thread.sleep(250);
        }
    }

    @Override
    public void close() throws InterruptedException {
        for (Process p : started.reversed()) {
            p.destroy();
        }
        long t0 = System.nanoTime();
        for (Process p : started) {
            long graceEnd = t0 + TimeUnit.SECONDS.toNanos(graceOf.get(p));
            if (!awaitStop(p, graceEnd)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * Waits until {@code p} has exited (true), or its grace time has ended or its log says the part of
     * its stop that matters is done (false: kill it); the log is read every 100 ms.
     */
    private boolean awaitStop(Process p, long graceEnd) throws InterruptedException {
        java.util.function.Predicate<String> stopped = stoppedOf.get(p);
        while (true) {
            long left = graceEnd - System.nanoTime();
            if (stopped == null) {
                return p.waitFor(Math.max(0, left), TimeUnit.NANOSECONDS);
            }
            if (p.waitFor(Math.max(0, Math.min(left, TimeUnit.MILLISECONDS.toNanos(100))), TimeUnit.NANOSECONDS)) {
                return true;
            }
            if (left <= 0 || stopped.test(readLog(logOf.get(p)))) {
                return false;
            }
        }
    }

    private static String readLog(Path log) {
        try {
            return Files.exists(log) ? Files.readString(log, java.nio.charset.StandardCharsets.ISO_8859_1) : "";
        } catch (IOException e) {
            return ""; // unreadable: the grace time decides
        }
    }
}
