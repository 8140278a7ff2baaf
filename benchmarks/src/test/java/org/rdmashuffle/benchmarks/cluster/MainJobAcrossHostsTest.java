package org.rdmashuffle.benchmarks.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

/**
 * The README's main job on Spark's standalone cluster across three Worker hosts (network namespaces,
 * each its own address), both shuffles, as {@code bin/shuffle-job --hosts 3 --compare 1} runs it: the
 * plugin jar through spark.jars and conf/spark-defaults.conf as shipped.
 */
class MainJobAcrossHostsTest {
    private static final Pattern EXECUTOR = Pattern.compile("^ {4}executor (\\S+) at (\\S+): (.*)$");
    private static final Pattern RDMA = Pattern.compile("fetched (\\d+) blocks \\(\\d+ bytes\\) over RDMA( from (.*))?, "
            + "(\\d+) over the built-in transport$");
    private static final Pattern ROUND = Pattern.compile(
            "^round \\d+ +(rdma|builtin) .* (\\d+) remote blocks +result (.*?)(  \\(recovered: (\\d+) executors lost.*)?$");
    private static final Pattern SERVER = Pattern.compile("(\\S+) \\((\\d+)\\)");

    @Test
    void bothShufflesAcrossThreeHosts_giveOneResult_andRdmaCarriesEveryRemoteBlockBetweenDistinctAddresses() throws Exception {
        Run run = run("--rows", "300000", "--compare", "1");
        ClusterJob.Result r = run.result();
        String printed = run.printed();

        List<String> results = new ArrayList<>();
        Set<String> executorHosts = new TreeSet<>();
        long rdmaRemoteBlocks = -1;
        long overRdma = 0;
        String shuffle = null;
        for (String line : r.output()) {
            Matcher round = ROUND.matcher(line);
            if (round.matches()) {
                shuffle = round.group(1);
                results.add(round.group(3));
                if (shuffle.equals("rdma")) {
                    rdmaRemoteBlocks = Long.parseLong(round.group(2));
                }
                continue;
            }
            Matcher e = EXECUTOR.matcher(line);
            if (!e.matches()) {
                continue;
            }
            String host = e.group(2);
            executorHosts.add(host);
            assertFalse(host.startsWith("127.") || host.equals("localhost"), "an executor on loopback: " + line);
            if ("rdma".equals(shuffle)) {
                assertTrue(e.group(3).startsWith("RDMA engine on ") && e.group(3).contains("(control " + host + ":"),
                        "the executor's engine listens on its host's address: " + line);
                Matcher m = RDMA.matcher(e.group(3));
                assertTrue(m.find(), line);
                assertEquals("0", m.group(4), "nothing over the built-in transport: " + line);
                long blocks = Long.parseLong(m.group(1));
                overRdma += blocks;
                if (blocks > 0) {
                    Matcher from = SERVER.matcher(m.group(3));
                    long fromOthers = 0;
                    while (from.find()) {
                        assertFalse(from.group(1).equals(host), "blocks fetched over RDMA from its own address: " + line);
                        fromOthers += Long.parseLong(from.group(2));
                    }
                    assertEquals(blocks, fromOthers, line);
                }
            }
        }
        assertEquals(2, results.size(), printed);
        assertEquals(results.get(0), results.get(1), "both shuffles give one result");
        assertTrue(printed.contains("identical results in all 2 runs"), printed);
        assertEquals(3, executorHosts.size(), "one executor per Worker host, each at its own address: " + executorHosts);
        assertTrue(rdmaRemoteBlocks > 0, "the job shuffled remote blocks: " + printed);
        assertEquals(rdmaRemoteBlocks, overRdma, "every remote block Spark counted came over RDMA");
        assertTrue(Pattern.compile("(?m)^ratio rdma/builtin: \\d+\\.\\d\\d \\(1 rounds, 3 hosts\\)$").matcher(printed).find(),
                printed);
        assertEquals(List.of(), r.leftNamespaces(), "namespaces left behind");
        assertEquals(List.of(), r.leftProcesses(), "processes left behind");
    }

    @Test
    void anExecutorKilledMidReduce_isRecoveredBySpark_onBothShuffles_withOneResult() throws Exception {
        Run run = run("--rows", "200000", "--compare", "1", "--kill-executor-in-reduce");
        List<String> results = new ArrayList<>();
        for (String line : run.result().output()) {
            Matcher round = ROUND.matcher(line);
            if (round.matches()) {
                results.add(round.group(3));
                assertTrue(round.group(5) != null && Integer.parseInt(round.group(5)) >= 1,
                        "the executor was killed and Spark saw it: " + line);
            }
        }
        assertEquals(2, results.size(), run.printed());
        assertEquals(results.get(0), results.get(1), "both shuffles give one result after the loss");
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
