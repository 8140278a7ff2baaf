package org.rdmashuffle.benchmarks.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.benchmarks.spark.MainJobRows;

/**
 * The README's main job on Spark's standalone cluster across three Worker hosts (network namespaces,
 * each its own address), both shuffles, as {@code bin/shuffle-job --hosts 3 --compare 1} runs it (one balanced pair): the
 * plugin jar through spark.jars and conf/spark-defaults.conf as shipped.
 */
class MainJobAcrossHostsTest {
    @Test
    void bothShufflesAcrossThreeHosts_giveOneResult_andRdmaCarriesEveryRemoteBlockBetweenDistinctAddresses() throws Exception {
        Run run = run("--rows", "300000", "--compare", "1", "--prometheus", "--no-warm-up");
        ClusterJob.Result r = run.result();
        String printed = run.printed();
        MainJobOutput out = MainJobOutput.parse(r.output());
        assertEquals(4, out.rounds().size(), printed); // one balanced pair: both orders
        assertEquals(List.of("builtin", "rdma", "rdma", "builtin"), out.rounds().stream().map(MainJobOutput.Round::shuffle).toList());
        out.assertOneResultAndEveryRemoteBlockOverRdma(3, "software", printed);
        assertTrue(printed.contains("identical results in all 4 runs"), printed);
        // Each run began once the last one's executors (seen from the driver's namespace) had exited.
        assertEquals(4, printed.lines().filter(l -> l.matches("^ {4}between runs: [1-9]\\d* executors of app-\\S+ exited .*, then sync .*"))
                .count(), printed);
        // The result computed without Spark, which the Soft-RoCE pair's RDMA-only run is checked against.
        assertEquals(MainJobRows.expectedResult(300_000, 16), out.results().getFirst(), printed);
        assertTrue(Pattern.compile("(?m)^ratio rdma/builtin: \\d+\\.\\d\\d \\(1 pair, no interval from one pair, 3 hosts\\)$").matcher(printed).find(),
                printed);
        assertTrue(Pattern.compile("(?m)^wall order effect \\(.*\\): built-in \\d+\\.\\d\\d, rdma-shuffle \\d+\\.\\d\\d$").matcher(printed)
                .find(), printed);
        // Where the time went: the map and the reduce stage, each with the ratio of the same round's runs.
        assertEquals(2, printed.lines().filter(l -> l.contains(" | rdma-shuffle / built-in | |")).count(), printed);
        assertPrometheusCountsWhatRdmaCarried(printed);
        assertWhatTheExecutorsHeld(printed);
        assertEquals(List.of(), r.leftNamespaces(), "namespaces left behind");
        assertEquals(List.of(), r.leftProcesses(), "processes left behind");
    }

    private static final Pattern ROUND = Pattern.compile("^round \\d+\\s+(\\S+)");
    private static final Pattern RESOURCES = Pattern.compile("^ {4}resources: executors' peak RSS (\\d+\\.\\d\\d)/(\\d+\\.\\d\\d)/(\\d+\\.\\d\\d) GiB "
            + "\\(file-backed at most .*\\), pinned at most .*, fds max ([\\d,]+), maps max ([\\d,]+), storage reads .* of (\\S+ \\S+) shuffle read "
            + "\\(page cache served .*\\), spilled .* memory / .* disk$");
    private static final Pattern REGISTERED = Pattern.compile("^ {4}registered \\(the plugin's gauges, by executor \\S+/\\S+/\\S+\\): "
            + "map outputs at most (\\S+)/(\\S+)/(\\S+) MiB \\(sampled each second\\), fetch buffers (\\S+)/(\\S+)/(\\S+) MiB$");

    /**
     * Every run says what its three executors held, read from /proc in the driver's namespace, and every rdma run
     * what the plugin registered on each (its gauges, sent by Spark's StatsD sink from the Workers' hosts).
     */
    private static void assertWhatTheExecutorsHeld(String printed) {
        List<Matcher> resources = printed.lines().map(RESOURCES::matcher).filter(Matcher::matches).toList();
        assertEquals(4, resources.size(), printed);
        for (Matcher m : resources) {
            for (int g = 1; g <= 3; g++) {
                assertTrue(Double.parseDouble(m.group(g)) > 0.05, "an executor's peak RSS: " + m.group());
            }
            assertTrue(Integer.parseInt(m.group(4).replace(",", "")) > 10 && Integer.parseInt(m.group(5).replace(",", "")) > 10, m.group());
            assertFalse(m.group(6).startsWith("0 "), "the reduce stage read the shuffle: " + m.group());
        }
        List<Matcher> registered = printed.lines().map(REGISTERED::matcher).filter(Matcher::matches).toList();
        assertEquals(2, registered.size(), printed); // the two rdma runs
        for (Matcher m : registered) {
            for (int g = 1; g <= 6; g++) {
                assertTrue(Double.parseDouble(m.group(g)) > 0, "each executor registered map outputs and fetch buffers: " + m.group());
            }
        }
        assertTrue(printed.contains("resources, the median of each shuffle's 2 runs"), printed);
    }
    private static final String PER_EXECUTOR = "prometheus per executor (id=engine.blocks,engine.bytes,fallback.blocks,fallbackCode"
            + "[;host:blocks from it]):";
    private static final Pattern FROM = Pattern.compile("over (?:RDMA|the software provider \\(TCP\\)) from (.*?), \\d+ over the built-in transport");
    private static final Pattern CARRIED = Pattern.compile("fetched (\\d+) blocks \\((\\d+) bytes\\) over (?:RDMA|the software provider \\(TCP\\))");
    private static final Pattern SCRAPED = Pattern.compile("prometheus after the job: engine.blocks=(\\d+) engine.bytes=(\\d+) "
            + "fallback.blocks=(\\d+) executors.onEngine=(\\d+) executors.fallenBack=(\\d+) completionErrors.total=(\\d+); "
            + "Spark's remote reads: blocks=(\\d+) bytes=(\\d+)");

    /**
     * Issue 36's proof on the bed: the driver's Prometheus endpoint (scraped over HTTP by the job, in
     * the driver's namespace, during and after each run) shows the RDMA blocks and bytes the executors'
     * "carried by" lines report and Spark's remote-read metrics count; the built-in run's executors
     * load the plugin and are counted as fallen back.
     */
    private static void assertPrometheusCountsWhatRdmaCarried(String printed) {
        String system = null;
        java.util.Map<String, long[]> carried = new java.util.HashMap<>();
        java.util.Map<String, Matcher> scraped = new java.util.HashMap<>();
        java.util.Map<String, String> during = new java.util.HashMap<>();
        java.util.Map<String, java.util.Map<String, long[]>> carriedBy = new java.util.HashMap<>();
        java.util.Map<String, java.util.Map<String, long[]>> scrapedBy = new java.util.HashMap<>();
        java.util.Map<String, java.util.Map<String, String>> linksBy = new java.util.HashMap<>();
        java.util.Map<String, java.util.Map<String, String>> scrapedLinks = new java.util.HashMap<>();
        for (String line : printed.lines().toList()) {
            Matcher round = ROUND.matcher(line);
            if (round.find()) {
                system = round.group(1);
                // A pair runs each system twice: what is checked is each system's last run, whole.
                for (java.util.Map<String, ?> m : List.of(carried, scraped, during, carriedBy, scrapedBy, linksBy, scrapedLinks)) {
                    m.remove(system);
                }
                continue;
            }
            if (system == null) {
                continue;
            }
            Matcher c = CARRIED.matcher(line);
            if (line.startsWith("    executor ") && c.find()) {
                long[] sum = carried.computeIfAbsent(system, k -> new long[2]);
                sum[0] += Long.parseLong(c.group(1));
                sum[1] += Long.parseLong(c.group(2));
                carriedBy.computeIfAbsent(system, k -> new java.util.TreeMap<>()).put(line.split(" +")[2],
                        new long[] {Long.parseLong(c.group(1)), Long.parseLong(c.group(2))});
                Matcher from = FROM.matcher(line);
                if (from.find()) { // "10.213.7.13 (57), 10.213.7.14 (60)" as "10_213_7_13:57;10_213_7_14:60"
                    linksBy.computeIfAbsent(system, k -> new java.util.TreeMap<>()).put(line.split(" +")[2],
                            from.group(1).replaceAll("(\\S+) \\((\\d+)\\)", "$1:$2").replace('.', '_').replace(", ", ";"));
                }
            }
            if (line.contains(PER_EXECUTOR)) {
                java.util.Map<String, long[]> each = scrapedBy.computeIfAbsent(system, k -> new java.util.TreeMap<>());
                for (String e : line.substring(line.indexOf(PER_EXECUTOR) + PER_EXECUTOR.length()).strip().split(" ")) {
                    String[] kv = e.split("=");
                    String[] figuresAndLinks = kv[1].split(";", 2);
                    each.put(kv[0], java.util.Arrays.stream(figuresAndLinks[0].split(",")).mapToLong(Long::parseLong).toArray());
                    scrapedLinks.computeIfAbsent(system, k -> new java.util.TreeMap<>()).put(kv[0],
                            figuresAndLinks.length > 1 ? figuresAndLinks[1] : "");
                }
            }
            Matcher m = SCRAPED.matcher(line);
            if (m.find()) {
                scraped.put(system, m);
            }
            if (line.contains("prometheus during the job:")) {
                during.put(system, line);
            }
        }
        Matcher rdma = scraped.get("rdma");
        long[] sum = carried.get("rdma");
        assertTrue(rdma != null && sum != null, "the rdma run's scrape and carriers: " + printed);
        assertTrue(sum[0] > 0, printed);
        assertEquals(sum[0], Long.parseLong(rdma.group(1)), "engine blocks: Prometheus against the carriers");
        assertEquals(sum[1], Long.parseLong(rdma.group(2)), "engine bytes: Prometheus against the carriers");
        assertEquals(rdma.group(7), rdma.group(1), "RDMA blocks: Prometheus against Spark's remote blocks fetched");
        assertEquals(rdma.group(8), rdma.group(2), "RDMA bytes: Prometheus against Spark's remote bytes read");
        assertEquals("0", rdma.group(3), "blocks over the fallback");
        assertEquals("3", rdma.group(4), "executors on the engine (a device or the software provider)");
        assertEquals("0", rdma.group(5), "executors fallen back");
        assertEquals("0", rdma.group(6), "failed completions");
        assertTrue(during.get("rdma") != null && !during.get("rdma").contains(" 0 scrapes answered"),
                "scraped during the rdma run: " + during.get("rdma"));
        // Per executor: the endpoint's figures of each executor equal its own carried-by line.
        java.util.Map<String, long[]> lines = carriedBy.get("rdma");
        java.util.Map<String, long[]> endpoint = scrapedBy.get("rdma");
        assertTrue(endpoint != null && endpoint.keySet().containsAll(lines.keySet()), "every executor on the endpoint: "
                + scrapedBy + " " + lines.keySet() + "\n" + printed);
        lines.forEach((id, c) -> {
            long[] e = endpoint.get(id);
            assertEquals(c[0], e[0], "executor " + id + "'s RDMA blocks, endpoint against its carried-by line");
            assertEquals(c[1], e[1], "executor " + id + "'s RDMA bytes, endpoint against its carried-by line");
            assertEquals(0, e[2], "executor " + id + "'s blocks over the fallback");
            assertEquals(0, e[3], "executor " + id + "'s fallback code (0: on RDMA)");
            assertEquals(new java.util.TreeSet<>(List.of(linksBy.getOrDefault("rdma", java.util.Map.of()).getOrDefault(id, "")
                            .split(";"))), new java.util.TreeSet<>(List.of(scrapedLinks.get("rdma").get(id).split(";"))),
                    "executor " + id + "'s blocks by serving host, endpoint against its carried-by line");
        });
        scrapedBy.get("builtin").forEach((id, e) -> assertEquals(98, e[3],
                "executor " + id + " of the built-in run: fallen back, Spark's own shuffle manager (98)"));
        Matcher builtin = scraped.get("builtin");
        assertTrue(builtin != null, printed);
        assertEquals("0", builtin.group(4), "Spark's own shuffle: no executor on the engine");
        assertEquals("3", builtin.group(5), "Spark's own shuffle: every executor loads the plugin and says it fell back");
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
