package org.rdmashuffle.benchmarks.cluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;

/** What the cluster-bed tests share: the skip rule, and running a command to its output. */
final class BedSupport {
    private BedSupport() {
    }

    /**
     * A test's driver and executors on the standalone bed run as the YARN bed's JVMs do ({@link
     * YarnCluster#JVM_OPTIONS}: C1 and the serial collector; not what any of these tests checks), so that
     * compiler and collector threads leave the 2 cores to the JVMs starting beside them. Added to the
     * shipped defaultJavaOptions; {@code bin/shuffle-job}'s runs, whose times are figures, keep the JVMs' defaults.
     */
    static final List<String> SPARK_JVMS = List.of("spark.driver.extraJavaOptions=" + YarnCluster.JVM_OPTIONS,
            "spark.executor.extraJavaOptions=" + YarnCluster.JVM_OPTIONS);

    /** Skips the test where hosts cannot be made, with the reason; under CI=true that fails instead. */
    static void requireBed() {
        String cause = ClusterBed.unavailabilityCause();
        if (cause != null && "true".equals(System.getenv("CI"))) {
            throw new AssertionError("CI must run the cluster-bed tests, but " + cause);
        }
        Assumptions.assumeTrue(cause == null, () -> "no cluster bed here: " + cause + " (run as root with iproute2)");
    }

    /** Runs {@code command} (bounded: 60 s) and returns its exit status and output, stderr included. */
    static Output run(List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(command + " did not finish in 60 s");
        }
        return new Output(p.exitValue(), out);
    }

    static String output(String... command) throws IOException, InterruptedException {
        return run(List.of(command)).text();
    }

    /** Nothing of a run is left: no namespace named {@code prefix}..., no process naming {@code runDir}. */
    static void assertNothingLeft(String prefix, java.nio.file.Path runDir) throws IOException, InterruptedException {
        org.junit.jupiter.api.Assertions.assertEquals(List.of(),
                output("ip", "netns", "list").lines().filter(l -> l.startsWith(prefix)).toList(), "no namespace left");
        String dir = runDir.toString();
        org.junit.jupiter.api.Assertions.assertEquals(List.of(), ProcessHandle.allProcesses()
                .filter(h -> h.pid() != ProcessHandle.current().pid())
                .filter(h -> h.info().commandLine().map(c -> c.contains(dir)).orElse(false)).map(ProcessHandle::pid).toList(),
                "no daemon or container left");
    }

    record Output(int status, String text) {
    }
}
