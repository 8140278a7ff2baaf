package org.rdmashuffle.benchmarks.spark;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.rdmashuffle.benchmarks.PeriodicSampler;

/**
 * What a run's executors hold while it runs, read from {@code /proc} once a second: each executor's
 * resident memory ({@code status}: {@code VmRSS}, its file-backed part {@code RssFile}, the kernel's own
 * peak {@code VmHWM}, and the pages pinned, {@code VmPin}), its open descriptors (entries of {@code fd}),
 * its memory mappings (lines of {@code maps}), and the bytes it had the storage read for it ({@code io}:
 * {@code read_bytes}, counted when a read or a page fault goes to the disk, not when the page cache
 * serves it). The executors are those of the application, found as {@link RunSeparation} finds them
 * (again every few seconds, for executors that start later); a driver that sees none (on another machine
 * than its executors) reports none.
 *
 * <p>Its cost is the same for every shuffle: four small reads per executor a second, and a listing of
 * the process table every five. Threads: one sampling thread of its own (a daemon), started by {@link
 * #start} and stopped by {@link #finish} (or {@link #close}, on a run that failed), which the job's thread calls; the readings are kept under this
 * object's lock. At most {@link #MAX_READINGS} readings of the storage counter are kept per executor (two
 * hours); the maxima keep counting past them.
 *
 * <p>{@link #read} and {@link #pageCacheShare} are public for the YARN bed's TeraSort runner ({@code
 * cluster.NodeManagerResources}), which reads its NodeManagers' {@code /proc} files the same way.
 */
public final class ExecutorResources implements AutoCloseable {
    private static final long PERIOD_MS = 1000;
    private static final long RESCAN_MS = 5000;
    static final int MAX_READINGS = 7200;

    /** One reading of one executor's {@code /proc} files, at {@code atMs} (epoch ms), bytes unless named otherwise. */
    public record Reading(long atMs, long rss, long peakRss, long fileRss, long pinned, int descriptors, int mappings, long storageReads) {
    }

    /** One executor's figures over a run: the largest of each reading, and its storage counter over time. */
    record Executor(long pid, long peakRss, long fileRss, long pinned, int descriptors, int mappings, long[] atMs, long[] storageReads) {
        /**
         * The bytes the storage read for it from its last reading at or before {@code fromMs} to its first at or
         * after {@code toMs} (its first and last readings where there is none): at most a period more than the window.
         */
        long storageReadsDuring(long fromMs, long toMs) {
            if (atMs.length == 0) {
                return 0;
            }
            int from = 0;
            for (int i = 0; i < atMs.length && atMs[i] <= fromMs; i++) {
                from = i;
            }
            int to = atMs.length - 1;
            for (int i = atMs.length - 1; i >= 0 && atMs[i] >= toMs; i--) {
                to = i;
            }
            return Math.max(0, storageReads[Math.max(from, to)] - storageReads[from]);
        }
    }

    private final String appId;
    private final Map<Long, Tracked> executors = new LinkedHashMap<>(); // by pid; guarded by this
    private PeriodicSampler sampler; // set once by start, before anyone else sees this
    private long lastScanMs;

    private ExecutorResources(String appId) {
        this.appId = appId;
    }

    /** Starts sampling the executors of application {@code appId}: a first reading now, then one a second. */
    static ExecutorResources start(String appId) {
        ExecutorResources r = new ExecutorResources(appId);
        r.sampler = PeriodicSampler.start("executor-resources", PERIOD_MS, r::sampleOnce);
        return r;
    }

    /** Stops sampling, takes a last reading, and returns each executor's figures, in the order they were found. */
    List<Executor> finish() throws InterruptedException {
        sampler.stop(TimeUnit.SECONDS.toMillis(10));
        sampleOnce();
        synchronized (this) {
            return executors.values().stream().map(Tracked::figures).toList();
        }
    }

    /** Stops sampling (the thread ends within a period). */
    @Override
    public void close() {
        sampler.close();
    }

    private void sampleOnce() {
        long now = System.currentTimeMillis();
        if (now - lastScanMs >= RESCAN_MS) {
            lastScanMs = now;
            for (ProcessHandle p : RunSeparation.executorsOf(appId)) {
                synchronized (this) {
                    executors.putIfAbsent(p.pid(), new Tracked(p.pid()));
                }
            }
        }
        List<Tracked> all;
        synchronized (this) {
            all = new ArrayList<>(executors.values());
        }
        for (Tracked t : all) {
            Reading r = read(t.pid, now);
            if (r != null) {
                synchronized (this) {
                    t.add(r);
                }
            }
        }
    }

    /** One reading of process {@code pid}, or null once it has gone (or this process may not read it). */
    public static Reading read(long pid, long atMs) {
        Path proc = Path.of("/proc", Long.toString(pid));
        try {
            String status = Files.readString(proc.resolve("status"), StandardCharsets.US_ASCII);
            String io = Files.readString(proc.resolve("io"), StandardCharsets.US_ASCII);
            int descriptors = 0;
            try (DirectoryStream<Path> fds = Files.newDirectoryStream(proc.resolve("fd"))) {
                for (Path ignored : fds) {
                    descriptors++;
                }
            }
            int mappings;
            try (InputStream maps = Files.newInputStream(proc.resolve("maps"))) {
                mappings = lines(maps);
            }
            return reading(atMs, status, io, descriptors, mappings);
        } catch (IOException | RuntimeException e) {
            return null; // gone meanwhile: its last reading stands
        }
    }

    /** A reading from the texts of {@code status} and {@code io}, with the counts of descriptors and mappings. */
    static Reading reading(long atMs, String status, String io, int descriptors, int mappings) {
        return new Reading(atMs, kib(status, "VmRSS"), kib(status, "VmHWM"), kib(status, "RssFile"), kib(status, "VmPin"),
                descriptors, mappings, field(io, "read_bytes"));
    }

    /** A {@code status} field given in kB ("VmRSS:   123456 kB"), in bytes; 0 where the kernel has none (a thread being reaped). */
    static long kib(String status, String name) {
        return field(status, name) * 1024;
    }

    /** The number after {@code name:} on its line of {@code text}, 0 when the line is missing. */
    static long field(String text, String name) {
        int at = text.startsWith(name + ":") ? 0 : text.indexOf("\n" + name + ":");
        if (at < 0) {
            return 0;
        }
        int i = text.indexOf(':', at) + 1;
        while (i < text.length() && (text.charAt(i) == ' ' || text.charAt(i) == '\t')) {
            i++;
        }
        int end = i;
        while (end < text.length() && Character.isDigit(text.charAt(end))) {
            end++;
        }
        if (end == i) {
            throw new IllegalArgumentException("no number after " + name + ": in " + text.substring(at, Math.min(text.length(), at + 60)));
        }
        return Long.parseLong(text, i, end, 10);
    }

    /** The lines of {@code in} (each ends with a newline, as {@code /proc/<pid>/maps} writes them). */
    static int lines(InputStream in) throws IOException {
        byte[] buffer = new byte[64 * 1024];
        int lines = 0;
        for (int n; (n = in.read(buffer)) > 0; ) {
            for (int i = 0; i < n; i++) {
                if (buffer[i] == '\n') {
                    lines++;
                }
            }
        }
        return lines;
    }

    /**
     * The share of the bytes a stage read through the shuffle that the page cache served: 1 - (what the
     * storage read for the executors meanwhile / the shuffle bytes read), within 0 and 1 (the storage may
     * read more than the shuffle: spills read back, classes loaded); NaN when the stage read nothing.
     */
    public static double pageCacheShare(long storageReads, long shuffleBytesRead) {
        if (shuffleBytesRead <= 0) {
            return Double.NaN;
        }
        return Math.max(0, Math.min(1, 1 - (double) storageReads / shuffleBytesRead));
    }

    /** What the sampler keeps of one executor; guarded by the sampler's lock. */
    private static final class Tracked {
        final long pid;
        long peakRss;
        long fileRss;
        long pinned;
        int descriptors;
        int mappings;
        final List<long[]> storageReads = new ArrayList<>();

        Tracked(long pid) {
            this.pid = pid;
        }

        void add(Reading r) {
            peakRss = Math.max(peakRss, Math.max(r.peakRss(), r.rss()));
            fileRss = Math.max(fileRss, r.fileRss());
            pinned = Math.max(pinned, r.pinned());
            descriptors = Math.max(descriptors, r.descriptors());
            mappings = Math.max(mappings, r.mappings());
            if (storageReads.size() < MAX_READINGS) {
                storageReads.add(new long[] {r.atMs(), r.storageReads()});
            }
        }

        Executor figures() {
            return new Executor(pid, peakRss, fileRss, pinned, descriptors, mappings,
                    storageReads.stream().mapToLong(x -> x[0]).toArray(), storageReads.stream().mapToLong(x -> x[1]).toArray());
        }
    }
}
