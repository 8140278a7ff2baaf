package org.rdmashuffle.benchmarks.tpcds;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** benchmarks/tpcds.sh: the documented runs parse; a bad scale, count, rate or query name is refused naming it. */
class TpcdsRunnerOptionsTest {
    @Test
    void theDocumentedRuns_parse() {
        TpcdsRunner.Options o = TpcdsRunner.Options.parse("--scale", "1", "--hosts", "3", "--rate", "10gbit", "--profile",
                "--pairs", "3", "--shuffle-partitions", "1000", "--queries", "q4,q11,q14a,q14b", "--control", "--rdma-first",
                "--cpu-by-thread");
        assertEquals(1.0, o.scale());
        assertEquals(3, o.hosts());
        assertEquals("10gbit", o.rate());
        assertEquals(3, o.pairs());
        assertEquals(1000, o.partitions());
        assertTrue(o.profile() && o.control() && o.rdmaFirst() && o.cpuByThread());
        TpcdsRunner.Options defaults = TpcdsRunner.Options.parse();
        assertEquals(0.1, defaults.scale());
        assertEquals("all", defaults.queries());
        assertEquals(0, defaults.hosts());
        assertEquals(1, defaults.pairs()); // one pair: two rounds, each query in both orders
        assertFalse(defaults.cpuByThread());
    }

    @Test
    void badValues_areRefusedNamingThem() {
        assertEquals("--scale takes a number such as 0.1 or 1, not 'big'", refused("--scale", "big"));
        assertEquals("--scale must be a number above 0, not '-1'", refused("--scale", "-1"));
        assertEquals("--hosts must be 1..198, not 0", refused("--hosts", "0"));
        assertEquals("--pairs must be at least 1, not 0", refused("--pairs", "0"));
        assertEquals("--rounds became --pairs N (N balanced pairs: 2N rounds, each query in both orders in every pair): "
                + "give --pairs instead of --rounds 2", refused("--rounds", "2"));
        assertEquals("--profile needs --hosts N (the cluster bed)", refused("--profile"));
        assertEquals("--cpu-by-thread needs --hosts N (the cluster bed)", refused("--cpu-by-thread"));
        assertTrue(refused("--queries", "q3,q999").startsWith("--queries: no TPC-DS query q999 "), refused("--queries", "q3,q999"));
        assertTrue(refused("--no-such-flag").startsWith("unknown argument --no-such-flag"));
    }

    private static String refused(String... args) {
        return assertThrows(IllegalArgumentException.class, () -> TpcdsRunner.Options.parse(args)).getMessage();
    }
}
