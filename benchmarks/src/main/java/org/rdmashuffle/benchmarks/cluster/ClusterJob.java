package org.rdmashuffle.benchmarks.cluster;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
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

import org.rdmashuffle.benchmarks.spark.ShuffleJob;

/**
 * {@code bin/shuffle-job --hosts N}: the main job ({@link ShuffleJob}) on Spark's standalone cluster
 * across hosts of our own. The bed gets N + 2 hosts: the Master, the driver, and N Workers (one
 * executor each); the driver is started by {@code spark-submit} with the installation's
 * spark-defaults.conf (the project's, as shipped), the job's jar as the application and the plugin
 * through {@code spark.jars}. Afterwards it checks that nothing was left behind: no namespace of the
 * bed and no process of the run.
 *
 * <pre>
 *   ClusterJob --hosts N [--rate RATE] [--cores C] [--run-dir DIR] [ShuffleJob arguments...]
 * </pre>
 */
public final class ClusterJob {
    private static final long JOB_MINUTES = 90;

    /** What a run printed and left behind. */
    public record Result(int exitCode, List<String> output, List<String> leftNamespaces, List<String> leftProcesses) {
    }

    private ClusterJob() {
    }

    public static void main(String[] args) throws Exception {
        int hosts = 0;
        String rate = null;
        int cores = 1;
        Path runDir = null;
        List<String> jobArgs = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--hosts" -> hosts = Integer.parseInt(args[++i]);
                case "--rate" -> rate = args[++i];
                case "--cores" -> cores = Integer.parseInt(args[++i]);
                case "--run-dir" -> runDir = Path.of(args[++i]);
                default -> jobArgs.add(args[i]);
            }
        }
        if (hosts < 2) {
            System.err.println("--hosts N needs N >= 2 (hosts for Workers; the Master and the driver get hosts of their own)");
            System.exit(2);
        }
        Result r = run(hosts, rate, cores, runDir, jobArgs, System.out);
        System.out.printf("cluster torn down: %d namespaces and %d processes left behind%n", r.leftNamespaces().size(),
                r.leftProcesses().size());
        r.leftNamespaces().forEach(n -> System.out.println("  left: namespace " + n));
        r.leftProcesses().forEach(p -> System.out.println("  left: process " + p));
        System.exit(r.exitCode() != 0 ? r.exitCode() : r.leftNamespaces().isEmpty() && r.leftProcesses().isEmpty() ? 0 : 1);
    }

    /**
     * Runs the main job on a standalone cluster of {@code workers} Worker hosts and returns what the
     * driver printed, echoing it to {@code echo} as it comes.
     */
    public static Result run(int workers, String rate, int cores, Path runDir, List<String> jobArgs, PrintStream echo)
            throws IOException, InterruptedException {
        if (runDir == null) {
            runDir = Repository.root().resolve("benchmarks/target/cluster-runs")
                    .resolve(LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
        }
        Files.createDirectories(runDir);
        SparkHome home = SparkHome.create(runDir.resolve("spark-home"), Repository.pluginJar());
        Path appJar = appJar(runDir.resolve("rdma-shuffle-main-job.jar"));
        List<String> args = new ArrayList<>(jobArgs);
        args.addAll(List.of("--executors", Integer.toString(workers)));
        List<String> output = new ArrayList<>();
        int exit;
        String prefix;
        echo.printf("cluster bed: %d hosts (Master, driver, %d Workers)%s; logs in %s%n", workers + 2, workers,
                rate == null ? ", links unshaped" : ", links shaped to " + rate + " (tbf)", runDir.resolve("logs"));
        try (ClusterBed bed = ClusterBed.start(workers + 2, rate)) {
            prefix = bed.namespacePrefix();
            try (StandaloneCluster cluster = StandaloneCluster.start(bed, home, runDir, cores)) {
                echo.println("standalone cluster up: master " + cluster.masterUrl() + ", driver at "
                        + cluster.driverHost().address() + ", Workers at "
                        + cluster.workerHosts().stream().map(ClusterBed.Host::address).toList());
                Process driver = cluster.submit(ShuffleJob.class.getName(), appJar, args);
                driver.getOutputStream().close();
                try (BufferedReader out = new BufferedReader(new InputStreamReader(driver.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    Thread pump = Thread.ofVirtual().start(() -> {
                        try {
                            for (String line = out.readLine(); line != null; line = out.readLine()) {
                                synchronized (output) {
                                    output.add(line);
                                }
                                echo.println(line);
                            }
                        } catch (IOException e) {
                            echo.println("(driver output broke off: " + e.getMessage() + ")");
                        }
                    });
                    if (!driver.waitFor(JOB_MINUTES, TimeUnit.MINUTES)) {
                        driver.destroyForcibly();
                        throw new IOException("the driver did not finish in " + JOB_MINUTES + " minutes");
                    }
                    pump.join(TimeUnit.SECONDS.toMillis(30));
                }
                exit = driver.exitValue();
                if (exit != 0) {
                    echo.println("the driver exited with status " + exit + "; its log: " + cluster.logs().resolve("driver.log"));
                    tail(cluster.logs().resolve("driver.log"), 40, echo);
                }
            }
        }
        return new Result(exit, List.copyOf(output), namespacesLeft(prefix), processesLeft(runDir));
    }

    /** The job's classes (no resources: executors keep their own logging) as the application jar. */
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

    private static List<String> namespacesLeft(String prefix) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("ip", "netns", "list").redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor(10, TimeUnit.SECONDS);
        return text.lines().map(l -> l.split(" ")[0]).filter(n -> n.startsWith(prefix)).toList();
    }

    /** Processes still running whose command line names this run's directory (its daemons and executors do). */
    private static List<String> processesLeft(Path runDir) {
        String dir = runDir.toAbsolutePath().toString();
        return ProcessHandle.allProcesses().filter(h -> h.pid() != ProcessHandle.current().pid())
                .filter(h -> h.info().commandLine().map(c -> c.contains(dir)).orElse(false))
                .map(h -> h.pid() + " " + h.info().command().orElse("?")).toList();
    }

    private static void tail(Path file, int lines, PrintStream out) throws IOException {
        if (Files.exists(file)) {
            List<String> all = Files.readAllLines(file);
            all.subList(Math.max(0, all.size() - lines), all.size()).forEach(l -> out.println("  | " + l));
        }
    }
}
