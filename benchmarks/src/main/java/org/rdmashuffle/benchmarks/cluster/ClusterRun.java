package org.rdmashuffle.benchmarks.cluster;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

import org.rdmashuffle.benchmarks.jfr.CompileTime;
import org.rdmashuffle.benchmarks.spark.ShuffleJob;

/**
 * One run on the cluster bed, everything it made owned in one place: the run directory (Spark home,
 * application jar, logs), the bed's hosts, and Spark's standalone cluster on them (the Master, the
 * driver's host, {@code workers} Workers). Drivers are started with {@link #submit}. Closing stops the
 * cluster, tears the bed down and records what was left behind.
 */
public final class ClusterRun implements AutoCloseable {
    private final Path runDir;
    private final Path appJar;
    private final ClusterBed bed;
    private final StandaloneCluster cluster;
    private final String namespacePrefix;
    private List<String> leftNamespaces = List.of();
    private List<String> leftProcesses = List.of();

    private ClusterRun(Path runDir, Path appJar, ClusterBed bed, StandaloneCluster cluster) {
        this.runDir = runDir;
        this.appJar = appJar;
        this.bed = bed;
        this.cluster = cluster;
        this.namespacePrefix = bed.namespacePrefix();
    }

    /**
     * @param rate tbf rate of every link, or null for unshaped links
     * @param cores cores each Worker offers
     * @param runDir where the run keeps its files, or null for a new one under benchmarks/target/cluster-runs
     */
    public static ClusterRun start(int workers, String rate, int cores, Path runDir, PrintStream echo) throws IOException,
            InterruptedException {
        return start(workers, rate, cores, runDir, echo, Repository.pluginJar(), Repository.root().resolve("conf/spark-defaults.conf"));
    }

    /**
     * As {@link #start(int, String, int, Path, PrintStream)}, with the plugin jar and the shipped
     * spark-defaults.conf given, e.g. those of an unpacked release tarball.
     */
    public static ClusterRun start(int workers, String rate, int cores, Path runDir, PrintStream echo, Path pluginJar,
                                   Path shippedConf) throws IOException, InterruptedException {
        if (runDir == null) {
            runDir = Repository.root().resolve("benchmarks/target/cluster-runs")
                    .resolve(LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
        }
        Files.createDirectories(runDir);
        SparkHome home = SparkHome.create(runDir.resolve("spark-home"), pluginJar, shippedConf);
        Path appJar = appJar(runDir.resolve("rdma-shuffle-benchmarks-app.jar"));
        echo.printf("cluster bed: %d hosts (Master, driver, %d Workers)%s; logs in %s%n", workers + 2, workers,
                rate == null ? ", links unshaped" : ", links shaped to " + rate + " (tbf)", runDir.resolve("logs"));
        ClusterBed bed = ClusterBed.start(workers + 2, rate);
        try {
            StandaloneCluster cluster = StandaloneCluster.start(bed, home, runDir, cores);
            echo.println("standalone cluster up: master " + cluster.masterUrl() + ", driver at " + cluster.driverHost().address()
                    + ", Workers at " + cluster.workerHosts().stream().map(ClusterBed.Host::address).toList());
            return new ClusterRun(runDir, appJar, bed, cluster);
        } catch (IOException | InterruptedException | RuntimeException e) {
            bed.close();
            throw e;
        }
    }

    /**
     * Starts a driver of {@code mainClass} (from this module's classes, shipped as the application jar)
     * with {@code spark-submit} in the driver's host; {@code sparkConfs} are extra {@code --conf}s.
     * Its standard error goes to {@code logs/<logName>}; the caller owns the process.
     */
    public Process submit(String mainClass, List<String> sparkConfs, List<String> args, String logName) throws IOException,
            InterruptedException {
        return cluster.submit(mainClass, appJar, sparkConfs, args, logName);
    }

    /** What a driver printed (its standard output, line by line) and how it ended (-1: killed after its time). */
    public record Finished(List<String> lines, int exit) {
        public String text() {
            return String.join("\n", lines);
        }
    }

    /**
     * Runs the main job's driver ({@link ShuffleJob}) to its end, as {@link #submit} starts it, its output
     * echoed to {@code echo}; killed after {@code minutes}.
     */
    public Finished runMainJob(List<String> sparkConfs, List<String> args, long minutes, PrintStream echo) throws IOException,
            InterruptedException {
        Process driver = submit(ShuffleJob.class.getName(), sparkConfs, args, "driver.log");
        driver.getOutputStream().close();
        DriverOutput out = new DriverOutput(driver, echo, null);
        if (!driver.waitFor(minutes, TimeUnit.MINUTES)) {
            driver.destroyForcibly();
        }
        out.join(30);
        return new Finished(out.lines(), driver.isAlive() ? -1 : driver.exitValue());
    }

    /**
     * The {@code --conf} that records every executor started with it with JDK Flight Recorder's
     * profiling settings, one file per executor JVM under {@code <run dir>/jfr/<label>/} (the shipped
     * {@code spark.executor.defaultJavaOptions} stay: Spark puts them before a job's extraJavaOptions).
     */
    public String profilingConf(String label, PrintStream echo) throws IOException {
        Path jfr = Files.createDirectories(runDir.resolve("jfr").resolve(label));
        echo.println("profiling executors with JFR into " + jfr);
        return "spark.executor.extraJavaOptions=-XX:StartFlightRecording=settings=profile," + CompileTime.EVERY_COMPILATION + ",filename=" + jfr + "/executor-%t-%p.jfr";
    }

    /** Where the run keeps its files; its processes' command lines name it. */
    public Path runDir() {
        return runDir;
    }

    public StandaloneCluster cluster() {
        return cluster;
    }

    public Path logs() {
        return cluster.logs();
    }

    /** Namespaces of this run still present after {@link #close()} (none, if teardown worked). */
    public List<String> leftNamespaces() {
        return leftNamespaces;
    }

    /** Processes whose command line names this run's directory still running after {@link #close()}. */
    public List<String> leftProcesses() {
        return leftProcesses;
    }

    @Override
    public void close() throws IOException, InterruptedException {
        try {
            cluster.close();
        } finally {
            bed.close();
            leftNamespaces = namespacesLeft(namespacePrefix);
            leftProcesses = processesLeft(runDir);
        }
    }

    /** The module's classes (no resources: executors keep their own logging) as the application jar. */
    static Path appJar(Path jar) throws IOException {
        Path classes;
        try {
            classes = Path.of(ShuffleJob.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (java.net.URISyntaxException e) {
            throw new IOException(e);
        }
        if (!Files.isDirectory(classes)) {
            return classes; // already a jar
        }
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar));
             Stream<Path> files = Files.walk(classes)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".class")).sorted().toList()) {
                out.putNextEntry(new JarEntry(classes.relativize(f).toString().replace('\\', '/')));
                Files.copy(f, out);
                out.closeEntry();
            }
        }
        return jar;
    }

    /** Network namespaces whose names start with {@code prefix}: what a run's bed left, if anything. */
    public static List<String> namespacesLeft(String prefix) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("ip", "netns", "list").redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor(10, TimeUnit.SECONDS);
        return text.lines().map(l -> l.split(" ")[0]).filter(n -> n.startsWith(prefix)).toList();
    }

    /** Processes (other than this one) whose command line names {@code runDir}: what a run left, if anything. */
    public static List<String> processesLeft(Path runDir) {
        String dir = runDir.toAbsolutePath().toString();
        List<String> left = new ArrayList<>();
        ProcessHandle.allProcesses().filter(h -> h.pid() != ProcessHandle.current().pid())
                .filter(h -> h.info().commandLine().map(c -> c.contains(dir)).orElse(false))
                .forEach(h -> left.add(h.pid() + " " + h.info().command().orElse("?")));
        return left;
    }
}
