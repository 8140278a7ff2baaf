package org.rdmashuffle.benchmarks.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

/** bin/shuffle-job --hosts: the bed's options read, the job's checked before any host is made. */
class ClusterJobOptionsTest {
    @Test
    void theDocumentedRuns_parse() {
        ClusterJob.Options o = ClusterJob.Options.parse("--hosts", "3", "--rate", "10gbit", "--compare", "5", "--profile",
                "--cpu-by-thread", "--rows", "2000000", "--maps", "1000", "--reducers", "1000");
        assertEquals(3, o.hosts());
        assertEquals("10gbit", o.rate());
        assertTrue(o.profile() && o.cpuByThread());
        assertEquals(List.of("--compare", "5", "--rows", "2000000", "--maps", "1000", "--reducers", "1000"), o.jobArgs());
        assertEquals(1, ClusterJob.Options.parse("--hosts", "2").cores());
        assertEquals(null, o.executorMemory(), "Spark's default unless asked");
        assertEquals("4g", ClusterJob.Options.parse("--hosts", "3", "--executor-memory", "4g").executorMemory());
    }

    @Test
    void badValues_ofTheBedOrOfTheJob_areRefusedNamingThem() {
        assertEquals("--hosts must be 2..198, not 1", refused("--hosts", "1"));
        assertEquals("--hosts takes a whole number, not 'three'", refused("--hosts", "three"));
        assertEquals("--rate takes a rate such as 25gbit or 500mbit, not 'fast'", refused("--hosts", "3", "--rate", "fast"));
        assertEquals("--cores must be at least 1, not 0", refused("--hosts", "3", "--cores", "0"));
        assertTrue(refused("--rate", "10gbit").startsWith("--hosts N is needed"));
        assertEquals("--executor-memory: 'lots' is not a size (e.g. 4g, 1536m)", refused("--hosts", "3", "--executor-memory", "lots"));
        assertEquals("--executor-memory: 100m is outside 512m..8192m (what each Worker offers)",
                refused("--hosts", "3", "--executor-memory", "100m"));
        assertEquals("--maps takes a whole number, not 'many'", refused("--hosts", "3", "--maps", "many"));
        assertTrue(refused("--hosts", "3", "--no-such-flag").startsWith("unknown argument --no-such-flag"));
    }

    private static String refused(String... args) {
        return assertThrows(IllegalArgumentException.class, () -> ClusterJob.Options.parse(args)).getMessage();
    }
}
