package org.rdmashuffle.benchmarks.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.benchmarks.spark.MainJobRows;

/**
 * The README's main job on Spark's standalone cluster across three Worker hosts (network namespaces,
 * each its own address), both shuffles, as {@code bin/shuffle-job --hosts 3 --compare 1} runs it: the
 * plugin jar through spark.jars and conf/spark-defaults.conf as shipped.
 */
class MainJobAcrossHostsTest {
    @Test
    void bothShufflesAcrossThreeHosts_giveOneResult_andRdmaCarriesEveryRemoteBlockBetweenDistinctAddresses() throws Exception {
        Run run = run("--rows", "300000", "--compare", "1");
        ClusterJob.Result r = run.result();
        String printed = run.printed();
        MainJobOutput out = MainJobOutput.parse(r.output());
        assertEquals(2, out.rounds().size(), printed);
        out.assertOneResultAndEveryRemoteBlockOverRdma(3, "software", printed);
        assertTrue(printed.contains("identical results in all 2 runs"), printed);
        // The result computed without Spark, which the Soft-RoCE pair's RDMA-only run is checked against.
        assertEquals(MainJobRows.expectedResult(300_000, 16), out.results().getFirst(), printed);
        assertTrue(Pattern.compile("(?m)^ratio rdma/builtin: \\d+\\.\\d\\d \\(1 rounds, 3 hosts\\)$").matcher(printed).find(),
                printed);
        // Where the time went: the map and the reduce stage, each with the ratio of the same round's runs.
        assertEquals(2, printed.lines().filter(l -> l.contains(" | rdma-shuffle / built-in | |")).count(), printed);
        assertEquals(List.of(), r.leftNamespaces(), "namespaces left behind");
        assertEquals(List.of(), r.leftProcesses(), "processes left behind");
    }

    /**
     * The plugin's shuffle alone (Spark's own recovery on its built-in shuffle is Spark's to test): its
     * result after the loss is the job's, computed without Spark.
     */
    @Test
    void anExecutorKilledMidReduce_isRecoveredBySpark_withTheJobsResult() throws Exception {
        Run run = run("--rows", "200000", "--shuffle", "rdma", "--kill-executor-in-reduce");
        MainJobOutput out = MainJobOutput.parseSingle(run.result().output());
        MainJobOutput.Round round = out.rounds().getFirst();
        assertTrue(round.executorsLost() >= 1, "the executor was killed and Spark saw it: " + run.printed());
        assertEquals(MainJobRows.expectedResult(200_000, 16), round.result(), "the job's result after the loss: " + run.printed());
        assertEquals(List.of(), run.result().leftNamespaces(), "namespaces left behind");
        assertEquals(List.of(), run.result().leftProcesses(), "processes left behind");
    }

    private record Run(ClusterJob.Result result, String printed) {
    }

    /** Runs the main job on three Worker hosts; fails the test if the driver failed. */
    private static Run run(String... jobArgs) throws Exception {
        BedSupport.requireBed();
        Path runDir = Files.createTempDirectory(Path.of(System.getProperty("java.io.tmpdir")), "main-job-across-hosts");
        ByteArrayOutputStream echo = new ByteArrayOutputStream();
        ClusterJob.Result r;
        try (PrintStream out = new PrintStream(echo, true, StandardCharsets.UTF_8)) {
            r = ClusterJob.run(3, null, 1, runDir, List.of(jobArgs), out);
        }
        String printed = echo.toString(StandardCharsets.UTF_8);
        System.out.println(printed);
        assertEquals(0, r.exitCode(), "the driver failed:\n" + printed);
        return new Run(r, printed);
    }
}
