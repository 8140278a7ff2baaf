package org.rdmashuffle.benchmarks.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the main job ({@code ShuffleJob --compare}) printed, read back: each round's shuffle, remote
 * blocks and result, and under it each executor's address and what carried its blocks. The tests
 * that run the job across hosts check it with {@link #assertOneResultAndEveryRemoteBlockOverRdma}.
 */
record MainJobOutput(List<Round> rounds) {
    private static final Pattern ROUND = Pattern.compile(
            "^round \\d+ +(rdma|builtin) .* (\\d+) remote blocks +result (.*?)"
            + "(  \\(recovered: (\\d+) executors lost, (\\d+) stage attempts retried\\))?$");
    private static final Pattern EXECUTOR = Pattern.compile("^ {4}executor (\\S+) at (\\S+): (.*)$");
    /** An engine's counts: over RDMA on a device, over the software provider (TCP) on that provider (issue 53). */
    private static final Pattern RDMA = Pattern.compile("fetched (\\d+) blocks \\(\\d+ bytes\\) over (?:RDMA|the software provider \\(TCP\\))"
            + "( from (.*))?, "
            + "(\\d+) over the built-in transport$");
    private static final Pattern SERVER = Pattern.compile("(\\S+) \\((\\d+)\\)");

    record Round(String shuffle, long remoteBlocks, String result, int executorsLost, int stagesRetried, List<Executor> executors) {
    }

    /** One executor's line: its address and what it said carried its blocks. */
    record Executor(String id, String address, String carrier, String line) {
    }

    static MainJobOutput parse(List<String> lines) {
        List<Round> rounds = new ArrayList<>();
        for (String line : lines) {
            Matcher round = ROUND.matcher(line);
            if (round.matches()) {
                rounds.add(new Round(round.group(1), Long.parseLong(round.group(2)), round.group(3),
                        round.group(5) == null ? 0 : Integer.parseInt(round.group(5)),
                        round.group(6) == null ? 0 : Integer.parseInt(round.group(6)), new ArrayList<>()));
                continue;
            }
            Matcher e = EXECUTOR.matcher(line);
            if (e.matches() && !rounds.isEmpty()) {
                rounds.getLast().executors().add(new Executor(e.group(1), e.group(2), e.group(3), line));
            }
        }
        return new MainJobOutput(List.copyOf(rounds));
    }

    List<String> results() {
        return rounds.stream().map(Round::result).toList();
    }

    /**
     * Both shuffles gave one result; every executor sat at its own non-loopback address ({@code hosts}
     * of them); in the RDMA rounds each executor's engine ran on {@code provider} and listened on its
     * host's address, fetched nothing over Spark's transport and nothing from its own address, and the
     * blocks fetched over RDMA add up to the remote blocks Spark counted.
     */
    void assertOneResultAndEveryRemoteBlockOverRdma(int hosts, String provider, String printed) {
        assertTrue(rounds.stream().anyMatch(r -> r.shuffle().equals("rdma")), "no RDMA round: " + printed);
        assertTrue(rounds.stream().anyMatch(r -> r.shuffle().equals("builtin")), "no built-in round: " + printed);
        assertEquals(1, Set.copyOf(results()).size(), "both shuffles give one result: " + results());
        assertEveryRemoteBlockOverRdma(hosts, provider, printed);
    }

    /**
     * As {@link #assertOneResultAndEveryRemoteBlockOverRdma}, without comparing results between rounds
     * (for a run of the RDMA round alone, whose result is checked against {@link
     * org.rdmashuffle.benchmarks.spark.MainJobRows#expectedResult} instead). {@code hosts} -1: as many as
     * there were (dynamic allocation decides).
     */
    void assertEveryRemoteBlockOverRdma(int hosts, String provider, String printed) {
        Set<String> addresses = new TreeSet<>();
        for (Round r : rounds) {
            for (Executor e : r.executors()) {
                addresses.add(e.address());
                assertFalse(e.address().startsWith("127.") || e.address().equals("localhost"), "an executor on loopback: " + e.line());
            }
            if (!r.shuffle().equals("rdma")) {
                continue;
            }
            assertTrue(r.remoteBlocks() > 0, "the job shuffled remote blocks: " + printed);
            long overRdma = 0;
            for (Executor e : r.executors()) {
                assertTrue(e.carrier().startsWith(provider.equals("software")
                                ? "the software provider (RC over TCP in the JVM, not RDMA) on " : "RDMA over ")
                        && e.carrier().contains("(provider " + provider + ", control " + e.address() + ":"),
                        "the executor's engine runs on " + provider + " and listens on its host's address: " + e.line());
                Matcher m = RDMA.matcher(e.carrier());
                assertTrue(m.find(), e.line());
                assertEquals("0", m.group(4), "nothing over the built-in transport: " + e.line());
                long blocks = Long.parseLong(m.group(1));
                overRdma += blocks;
                if (blocks > 0) {
                    Matcher from = SERVER.matcher(m.group(3));
                    long fromOthers = 0;
                    while (from.find()) {
                        assertFalse(from.group(1).equals(e.address()), "blocks fetched over RDMA from its own address: " + e.line());
                        fromOthers += Long.parseLong(from.group(2));
                    }
                    assertEquals(blocks, fromOthers, e.line());
                }
            }
            assertEquals(r.remoteBlocks(), overRdma, "every remote block Spark counted came over RDMA: " + printed);
        }
        if (hosts >= 0) {
            assertEquals(hosts, addresses.size(), "one executor per Worker host, each at its own address: " + addresses);
        }
    }

    private static final Pattern SINGLE_RESULT = Pattern.compile("^result: +(.*)$");
    private static final Pattern SINGLE_TIME = Pattern.compile("^time: +\\d+ ms \\((\\w+) shuffle\\)"
            + "(  \\(recovered: (\\d+) executors lost, (\\d+) stage attempts retried\\))?$");
    private static final Pattern SINGLE_BLOCKS = Pattern.compile("^shuffle: .* in (\\d+) remote blocks;");
    private static final Pattern SINGLE_EXECUTOR = Pattern.compile("^ {2}executor (\\S+) at (\\S+): (.*)$");

    /** The output of one run of the job (no {@code --compare}): its "result:", "time:", "shuffle:" and "carried by:" lines. */
    static MainJobOutput parseSingle(List<String> lines) {
        String result = null;
        String shuffle = null;
        int lost = 0;
        int retried = 0;
        long blocks = -1;
        List<Executor> executors = new ArrayList<>();
        for (String line : lines) {
            Matcher m;
            if ((m = SINGLE_RESULT.matcher(line)).matches()) {
                result = m.group(1);
            } else if ((m = SINGLE_TIME.matcher(line)).matches()) {
                shuffle = m.group(1);
                lost = m.group(3) == null ? 0 : Integer.parseInt(m.group(3));
                retried = m.group(4) == null ? 0 : Integer.parseInt(m.group(4));
            } else if ((m = SINGLE_BLOCKS.matcher(line)).find()) {
                blocks = Long.parseLong(m.group(1));
            } else if ((m = SINGLE_EXECUTOR.matcher(line)).matches()) {
                executors.add(new Executor(m.group(1), m.group(2), m.group(3), line));
            }
        }
        if (result == null || shuffle == null || blocks < 0) {
            throw new AssertionError("not the output of one run of the job: " + lines);
        }
        return new MainJobOutput(List.of(new Round(shuffle, blocks, result, lost, retried, executors)));
    }
}
