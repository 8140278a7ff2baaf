package org.rdmashuffle.benchmarks.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.benchmarks.spark.JobsOwnPlugin;
import org.rdmashuffle.benchmarks.spark.MainJobRows;

/**
 * The shipped spark-defaults.conf adds to a job's settings: a job submitted with its own
 * {@code spark.plugins} (another plugin, as RAPIDS or a profiler would be) and its own
 * {@code spark.{driver,executor}.extraJavaOptions} keeps rdma-shuffle's plugin (its Prometheus figures
 * count every executor on the engine) and the shipped Java options (native access), has its own plugin
 * and options too, and its shuffle goes over the engine. Spark's standalone cluster on two Worker hosts.
 */
class ComposedConfsAcrossHostsTest {
    private static final int ROWS = 100_000;
    private static final int MAPS = 4;
    private static final Pattern OWN = Pattern.compile(Pattern.quote(JobsOwnPlugin.LINE)
            + " driver option=(\\S*) nativeAccess=(\\S+); executors \\{(.*)\\}$");
    private static final Pattern SCRAPED = Pattern.compile("prometheus after the job: rdma.blocks=(\\d+) .*"
            + "executors.onRdma=(\\d+) executors.fallenBack=(\\d+)");

    @Test
    void aJobWithItsOwnPluginAndJavaOptions_keepsTheShippedOnes_andShufflesOverTheEngine() throws Exception {
        BedSupport.requireBed();
        Path runDir = Files.createTempDirectory(Path.of(System.getProperty("java.io.tmpdir")), "composed-confs");
        ClusterRun run = ClusterRun.start(2, null, 1, runDir, System.out);
        ClusterRun.Finished driver;
        try (run) {
            driver = run.runMainJob(List.of(
                    "spark.plugins=" + JobsOwnPlugin.class.getName(),
                    "spark.driver.extraJavaOptions=-D" + JobsOwnPlugin.OWN_OPTION + "=driver",
                    "spark.executor.extraJavaOptions=-D" + JobsOwnPlugin.OWN_OPTION + "=executor"),
                    List.of("--rows", Integer.toString(ROWS), "--maps", Integer.toString(MAPS), "--shuffle", "rdma",
                            "--executors", "2", "--prometheus"), 10, System.out);
        }
        List<String> printed = driver.lines();
        assertEquals(List.of(), run.leftNamespaces(), "namespaces left behind");
        assertEquals(List.of(), run.leftProcesses(), "processes left behind");
        String text = driver.text();
        assertEquals(0, driver.exit(), "the driver finished; its log: " + runDir.resolve("logs/driver.log") + "\n" + text);

        MainJobOutput job = MainJobOutput.parseSingle(printed);
        assertEquals(MainJobRows.expectedResult(ROWS, MAPS), job.rounds().getFirst().result(), text);
        job.assertEveryRemoteBlockOverRdma(2, "software", text);
        int executors = job.rounds().getFirst().executors().size();

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
}
