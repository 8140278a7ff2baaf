package org.rdmashuffle.benchmarks.cluster;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.rdmashuffle.benchmarks.CommandLine;
import org.rdmashuffle.benchmarks.spark.ShuffleJob;

/**
 * {@code bin/shuffle-job --hosts N}: the main job ({@link ShuffleJob}) on Spark's standalone cluster
 * across hosts of our own. The bed gets N + 2 hosts: the Master, the driver, and N Workers (one
 * executor each); the driver is started by {@code spark-submit} with the installation's
 * spark-defaults.conf (the project's, as shipped), the job's jar as the application and the plugin
 * through {@code spark.jars} ({@link ClusterRun}). Afterwards it checks that nothing was left behind:
 * no namespace of the bed and no process of the run.
 *
 * <pre>
 *   ClusterJob --hosts N [--rate RATE] [--cores C] [--run-dir DIR] [--profile] [--cpu-by-thread] [ShuffleJob arguments...]
 * </pre>
 * {@code --profile} records every executor (both shuffles alike) with JDK Flight Recorder's profiling
 * settings, one file per executor JVM under {@code <run dir>/jfr/}. {@code --cpu-by-thread} samples
 * every thread of the run's processes from {@code /proc} and prints each stage's CPU on the whole
 * machine by who spent it ({@link CpuByStage}).
 */
public final class ClusterJob {
    private static final long JOB_MINUTES = 90;

    /** What a run printed and left behind. */
    public record Result(int exitCode, List<String> output, List<String> leftNamespaces, List<String> leftProcesses) {
    }

    private ClusterJob() {
    }

    /** Its command line: the bed's options, and the rest for {@link ShuffleJob}. */
    record Options(int hosts, String rate, int cores, String executorMemory, Path runDir, boolean profile, boolean cpuByThread,
                   List<String> jobArgs) {
        /** The most Worker hosts: the bed makes at most 200, and the Master and the driver take two. */
        static final int MAX_HOSTS = 198;

        /** Parses and checks the whole command line, the job's arguments too; a bad one is an IllegalArgumentException naming it. */
        static Options parse(String... args) {
            Integer hosts = null;
            String rate = null;
            int cores = 1;
            String executorMemory = null;
            Path runDir = null;
            boolean profile = false;
            boolean cpuByThread = false;
            List<String> jobArgs = new ArrayList<>();
            for (int i = 0; i < args.length; i++) {
                String option = args[i];
                switch (option) {
                    case "--hosts" -> hosts = CommandLine.wholeNumber(option, CommandLine.value(args, ++i, option), 2, MAX_HOSTS);
                    case "--rate" -> rate = CommandLine.rate(option, CommandLine.value(args, ++i, option));
                    case "--cores" -> cores = CommandLine.atLeast(option, CommandLine.value(args, ++i, option), 1);
                    case "--executor-memory" -> executorMemory = executorMemory(option, CommandLine.value(args, ++i, option));
                    case "--run-dir" -> runDir = Path.of(CommandLine.value(args, ++i, option));
                    case "--profile" -> profile = true;
                    case "--cpu-by-thread" -> cpuByThread = true;
                    default -> jobArgs.add(option);
                }
            }
            if (hosts == null) {
                throw new IllegalArgumentException("--hosts N is needed (N >= 2 hosts for Workers; the Master and the driver "
                        + "get hosts of their own)");
            }
            List<String> checked = new ArrayList<>(jobArgs);
            checked.addAll(List.of("--executors", Integer.toString(hosts)));
            ShuffleJob.checkArguments(checked);
            return new Options(hosts, rate, cores, executorMemory, runDir, profile, cpuByThread, List.copyOf(jobArgs));
        }

        /** A size as Spark reads spark.executor.memory (e.g. 4g, 1536m), at least 512 MiB and at most a Worker's offer. */
        private static String executorMemory(String option, String value) {
            long mib;
            try {
                mib = org.apache.spark.network.util.JavaUtils.byteStringAsMb(value);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(option + ": '" + value + "' is not a size (e.g. 4g, 1536m)");
            }
            if (mib < 512 || mib > StandaloneCluster.WORKER_MEMORY_MIB) {
                throw new IllegalArgumentException(option + ": " + value + " is outside 512m.." + StandaloneCluster.WORKER_MEMORY_MIB
                        + "m (what each Worker offers)");
            }
            return value;
        }
    }

    public static void main(String[] args) throws Exception {
        Options o = CommandLine.parseOrExit("ClusterJob", () -> Options.parse(args));
        int hosts = o.hosts();
        String cannot = ClusterBed.unavailabilityCause();
        if (cannot != null) {
            System.err.println("bin/shuffle-job --hosts makes hosts as network namespaces, and cannot here: " + cannot
                    + ". Run it as root (sudo bin/shuffle-job --hosts " + hosts + " ...), or without --hosts for local-cluster.");
            System.exit(ClusterBed.CANNOT);
        }
        Result r = run(hosts, o.rate(), o.cores(), o.executorMemory(), o.runDir(), o.profile(), o.cpuByThread(), o.jobArgs(),
                System.out);
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
        return run(workers, rate, cores, null, runDir, false, false, jobArgs, echo);
    }

    private static Result run(int workers, String rate, int cores, String executorMemory, Path runDir, boolean profile,
                              boolean cpuByThread, List<String> jobArgs, PrintStream echo) throws IOException, InterruptedException {
        List<String> args = new ArrayList<>(jobArgs);
        args.addAll(List.of("--executors", Integer.toString(workers)));
        List<String> output = new ArrayList<>();
        int exit;
        ClusterRun run = ClusterRun.start(workers, rate, cores, runDir, echo);
        try (run; ThreadCpuSampler sampler = cpuByThread ? ThreadCpuSampler.start(run.runDir()) : null) {
            List<String> confs = new ArrayList<>(); // both shuffles alike
            if (profile) {
                confs.add(run.profilingConf("executors", echo));
            }
            if (executorMemory != null) {
                confs.add("spark.executor.memory=" + executorMemory);
            }
            Process driver = run.submit(ShuffleJob.class.getName(), confs, args, "driver.log");
            driver.getOutputStream().close();
            DriverOutput printed = new DriverOutput(driver, echo, null);
            if (!driver.waitFor(JOB_MINUTES, TimeUnit.MINUTES)) {
                driver.destroyForcibly();
                throw new IOException("the driver did not finish in " + JOB_MINUTES + " minutes");
            }
            printed.join(30);
            output.addAll(printed.lines());
            exit = driver.exitValue();
            if (sampler != null) {
                CpuByStage.print(sampler, output, echo);
            }
            if (exit != 0) {
                echo.println("the driver exited with status " + exit + "; its log: " + run.logs().resolve("driver.log"));
                tail(run.logs().resolve("driver.log"), 40, echo);
            }
        }
        return new Result(exit, List.copyOf(output), run.leftNamespaces(), run.leftProcesses());
    }

    private static void tail(Path file, int lines, PrintStream out) throws IOException {
        if (Files.exists(file)) {
            List<String> all = Files.readAllLines(file);
            all.subList(Math.max(0, all.size() - lines), all.size()).forEach(l -> out.println("  | " + l));
        }
    }
}
