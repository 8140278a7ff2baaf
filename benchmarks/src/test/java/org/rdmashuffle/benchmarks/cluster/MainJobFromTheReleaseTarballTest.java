package org.rdmashuffle.benchmarks.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.benchmarks.spark.JobsOwnPlugin;
import org.rdmashuffle.benchmarks.spark.MainJobRows;

/**
 * The release as an operator gets it: {@code bin/dist} packs the jars this build made into the tarball
 * (no Maven of its own: {@code --no-build}), the tarball is checked against its .sha512 and unpacked as
 * docs/releasing.md and the README say, and Spark's standalone cluster on two Worker hosts is set up from
 * it alone, as docs/spark.md says: the tarball's plugin jar, and its conf/spark-defaults.conf with the
 * jar's install path and a secret filled in. The main job then runs, its shuffle on the engine, with the
 * result computed without Spark.
 *
 * <p>The job is submitted as a user's job would be, with settings of its own that the shipped conf also
 * sets: its own {@code spark.plugins} (another plugin, as RAPIDS or a profiler would be) and its own
 * {@code spark.{driver,executor}.extraJavaOptions}. The shipped conf adds to them instead of replacing
 * them: the job keeps its plugin and options, and rdma-shuffle's plugin (its Prometheus figures count
 * every executor on the engine) and the shipped Java options (native access) are there too.
 */
class MainJobFromTheReleaseTarballTest {
    private static final int ROWS = 200_000;
    private static final int MAPS = 8;
    private static final Pattern OWN = Pattern.compile(Pattern.quote(JobsOwnPlugin.LINE)
            + " driver option=(\\S*) nativeAccess=(\\S+); executors \\{(.*)\\}$");
    private static final Pattern SCRAPED = Pattern.compile("prometheus after the job: engine.blocks=(\\d+) .*"
            + "executors.onEngine=(\\d+) executors.fallenBack=(\\d+)");

    @Test
    void theTarballsJarAndConf_runAJobWithItsOwnPluginAndJavaOptions_keepingBoth_overTheEngine() throws Exception {
        BedSupport.requireBed();
        Path work = Files.createTempDirectory(Path.of(System.getProperty("java.io.tmpdir")), "from-the-release");
        Path dist = work.resolve("dist");
        Output packed = run(List.of(Repository.root().resolve("bin/dist").toString(), "--no-build", "--out", dist.toString()),
                Repository.root(), 5);
        assertEquals(0, packed.exit(), "bin/dist --no-build: " + packed.text());
        Path tarball;
        try (Stream<Path> files = Files.list(dist)) {
            tarball = files.filter(f -> f.getFileName().toString().matches("rdma-shuffle-.*-bin\\.tar\\.gz")).findFirst()
                    .orElseThrow(() -> new AssertionError("no tarball in " + dist + ": " + packed.text()));
        }
        Output verified = run(List.of("sha512sum", "-c", tarball.getFileName() + ".sha512"), dist, 1);
        assertEquals(0, verified.exit(), "the tarball against its .sha512: " + verified.text());
        Path opt = Files.createDirectories(work.resolve("opt"));
        Output unpacked = run(List.of("tar", "-xzf", tarball.toString(), "-C", opt.toString()), opt, 1);
        assertEquals(0, unpacked.exit(), unpacked.text());
        Path release = opt.resolve(tarball.getFileName().toString().replace("-bin.tar.gz", ""));
        Path pluginJar;
        try (Stream<Path> jars = Files.list(release.resolve("jars"))) {
            pluginJar = jars.filter(j -> j.getFileName().toString().matches("rdma-shuffle-spark-.*-plugin\\.jar")).findFirst()
                    .orElseThrow(() -> new AssertionError("no Spark plugin jar in the tarball's jars/"));
        }

        Path runDir = work.resolve("run");
        ClusterRun cluster = ClusterRun.start(2, null, 1, runDir, System.out, pluginJar,
                release.resolve("conf/spark-defaults.conf"));
        ClusterRun.Finished driver;
        try (cluster) {
            driver = cluster.runMainJob(List.of(
                    "spark.plugins=" + JobsOwnPlugin.class.getName(),
                    "spark.driver.extraJavaOptions=-D" + JobsOwnPlugin.OWN_OPTION + "=driver",
                    "spark.executor.extraJavaOptions=-D" + JobsOwnPlugin.OWN_OPTION + "=executor"),
                    List.of("--rows", Integer.toString(ROWS), "--maps", Integer.toString(MAPS),
                    "--shuffle", "rdma", "--executors", "2", "--prometheus"), 10, System.out);
        }
        List<String> printed = driver.lines();
        assertEquals(List.of(), cluster.leftNamespaces(), "namespaces left behind");
        assertEquals(List.of(), cluster.leftProcesses(), "processes left behind");
        String text = driver.text();
        assertEquals(0, driver.exit(), "the driver finished; its log: " + runDir.resolve("logs/driver.log") + "\n" + text);
        String defaults = Files.readString(runDir.resolve("spark-home/conf/spark-defaults.conf"));
        assertTrue(defaults.contains("spark.jars                          " + pluginJar.toAbsolutePath()),
                "the cluster's spark-defaults.conf is the tarball's, its jar path set to the tarball's jar:\n" + defaults);
        MainJobOutput job = MainJobOutput.parseSingle(printed);
        assertEquals(MainJobRows.expectedResult(ROWS, MAPS), job.rounds().getFirst().result(), text);
        job.assertEveryRemoteBlockOverRdma(2, "software", text);
        assertTheJobsOwnSettingsAndTheShippedOnesBothTookEffect(printed, job.rounds().getFirst().executors().size(), text);
        deleteTree(work);
    }

    /** The job's own plugin ran on the driver and every executor, each with the job's option and the shipped one. */
    private static void assertTheJobsOwnSettingsAndTheShippedOnesBothTookEffect(List<String> printed, int executors, String text) {
        Matcher own = printed.stream().map(OWN::matcher).filter(Matcher::find).findFirst().orElse(null);
        assertTrue(own != null, "the job's own plugin ran on the driver: " + text);
        assertEquals("driver", own.group(1), "the job's own driver option: " + own.group());
        assertEquals("true", own.group(2), "the shipped driver option (native access) kept: " + own.group());
        List<String> reports = List.of(own.group(3).split(", "));
        assertEquals(executors, reports.size(), "every executor ran the job's own plugin: " + own.group());
        for (String r : reports) {
            assertTrue(r.endsWith("=option=executor nativeAccess=true"),
                    "an executor with the job's own option and the shipped one: " + r);
        }
        Matcher scraped = printed.stream().map(SCRAPED::matcher).filter(Matcher::find).findFirst().orElse(null);
        assertTrue(scraped != null, "rdma-shuffle's plugin published its figures beside the job's plugin: " + text);
        assertTrue(Long.parseLong(scraped.group(1)) > 0, scraped.group());
        assertEquals(Integer.toString(executors), scraped.group(2), "every executor counted on the engine: " + scraped.group());
        assertEquals("0", scraped.group(3), scraped.group());
    }

    private record Output(int exit, String text) {
    }

    private static Output run(List<String> command, Path dir, long minutes) throws IOException, InterruptedException {
        Path log = Files.createTempFile("from-the-release", ".log");
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).redirectOutput(log.toFile())
                .start();
        p.getOutputStream().close();
        if (!p.waitFor(minutes, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            p.waitFor();
        }
        String text = Files.readString(log, StandardCharsets.UTF_8);
        Files.delete(log);
        return new Output(p.exitValue(), text);
    }

    private static void deleteTree(Path root) throws IOException {
        try (Stream<Path> all = Files.walk(root)) {
            for (Path p : all.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
