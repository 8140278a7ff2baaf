package org.rdmashuffle.benchmarks.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * bin/terasort-job's command line, read and checked before any host is made, and what the runner reads
 * back from Hadoop: the job client's counters, TeraValidate's report and the JobHistoryServer's answers.
 */
class TeraSortJobOptionsTest {
    @Test
    void theDocumentedRuns_parse_andTheDefaultsAreWhatTheUsageSays() {
        TeraSortJob.Options d = TeraSortJob.Options.parse();
        assertEquals(2_000_000, d.rows());
        assertEquals(4, d.maps());
        assertEquals(2, d.nodes());
        assertEquals(2, d.reduces(), "one reduce a NodeManager");
        assertEquals(1, d.compare());
        assertEquals(2048, d.nodeMb());
        assertTrue(d.warmUp());
        assertFalse(d.keepData());
        assertEquals(null, d.runDir());

        TeraSortJob.Options o = TeraSortJob.Options.parse("--rows", "100000000", "--maps", "16", "--nodes", "3", "--compare", "2",
                "--no-warm-up", "--node-mb", "8192", "--run-dir", "/tmp/x", "--keep-data");
        assertEquals(10_000_000_000L, o.inputBytes());
        assertEquals(3, o.reduces(), "one a node, of the nodes asked for");
        assertEquals(16, o.maps());
        assertEquals(2, o.compare());
        assertFalse(o.warmUp());
        assertTrue(o.keepData());
        assertEquals(8192, o.nodeMb());
        assertEquals(Path.of("/tmp/x"), o.runDir());
        assertEquals(7, TeraSortJob.Options.parse("--reduces", "7").reduces());
    }

    @Test
    void badValues_areRefusedNamingTheOptionAndTheValue() {
        assertEquals("--rows takes a whole number, not '1e9'", refused("--rows", "1e9"));
        assertEquals("--maps must be at least 1, not 0", refused("--maps", "0"));
        assertEquals("--reduces must be at least 1, not -2", refused("--reduces", "-2"));
        assertEquals("--nodes must be 2..8, not 9", refused("--nodes", "9"));
        assertEquals("--compare must be at least 1, not 0", refused("--compare", "0"));
        assertEquals("--node-mb must be 2048..65536, not 1024", refused("--node-mb", "1024"));
        assertEquals("--run-dir needs a value", refused("--run-dir"));
        assertEquals("unknown argument '--shuffle'", refused("--shuffle", "rdma"));
        assertTrue(refused("--rows", "3", "--maps", "4").startsWith("--rows 3 is fewer than the 4 maps"));
    }

    /** As Hadoop 3.5's job client prints them at a job's end: name, a space, '=', the value. */
    @Test
    void theJobClientsCounters_areReadByName() {
        String log = """
                2026-12-03 18:00:01,000 INFO mapreduce.Job: Running job: job_1764784800000_0003
                2026-12-03 18:00:09,000 INFO mapreduce.Job: Counters: 57
                	File System Counters
                		FILE: Number of bytes read=412
                	Job Counters\s
                		Launched map tasks=8
                		Launched reduce tasks=2
                	Map-Reduce Framework
                		Reduce shuffle bytes=208000096
                		Shuffled Maps =16
                		CPU time spent (ms)=91230
                	org.rdmashuffle.hadoop.RdmaShuffleCounter
                		BYTES_OVER_SOFTWARE_PROVIDER=208000096
                		MAP_OUTPUTS_OVER_SOFTWARE_PROVIDER=16
                """;
        Map<String, Long> c = TeraSortJob.counters(log);
        assertEquals(16, c.get("Shuffled Maps"));
        assertEquals(208_000_096L, c.get("Reduce shuffle bytes"));
        assertEquals(91_230, c.get("CPU time spent (ms)"));
        assertEquals(8, c.get("Launched map tasks"));
        assertEquals(208_000_096L, c.get("BYTES_OVER_SOFTWARE_PROVIDER"));
        assertEquals("job_1764784800000_0003", TeraSortJob.jobId(log));
        assertThrows(IllegalStateException.class, () -> TeraSortJob.application(log), "no application id printed");
    }

    @Test
    void teraValidatesReport_givesItsChecksum_orFailsOnAnError(@TempDir Path dir) throws Exception {
        Files.createDirectories(dir.resolve("ok"));
        Files.writeString(dir.resolve("ok/part-r-00000"), "checksum\t3d0e5f1a2b9c\n");
        assertEquals("3d0e5f1a2b9c", TeraSortJob.checksum(dir.resolve("ok")));
        Files.createDirectories(dir.resolve("bad"));
        Files.writeString(dir.resolve("bad/part-r-00000"), "misorder in part-r-00001 between 0a 1b and 09 ff\nchecksum\t1\n");
        assertTrue(assertThrows(IllegalStateException.class, () -> TeraSortJob.checksum(dir.resolve("bad"))).getMessage()
                .contains("misorder"));
    }

    @Test
    void theHistoryServersAnswers_giveThePhases() throws Exception {
        String job = """
                {"job":{"startTime":1000,"finishTime":61000,"id":"job_1_1","avgMapTime":9000,"avgReduceTime":4000,
                "avgShuffleTime":12000,"avgMergeTime":3000}}""";
        String tasks = """
                {"tasks":{"task":[{"startTime":2000,"finishTime":12000,"type":"MAP"},{"startTime":3000,"finishTime":30000,"type":"MAP"},
                {"startTime":31000,"finishTime":58000,"type":"REDUCE"},{"startTime":31500,"finishTime":60000,"type":"REDUCE"}]}}""";
        JobPhases p = JobPhases.parse(job, tasks);
        assertEquals(new JobPhases(60_000, 28_000, 29_000, 12_000, 3_000, 4_000), p);
        assertThrows(java.io.IOException.class, () -> JobPhases.parse("{\"RemoteException\":{}}", tasks));
    }

    private static String refused(String... args) {
        return assertThrows(IllegalArgumentException.class, () -> TeraSortJob.Options.parse(args)).getMessage();
    }
}
