package org.rdmashuffle.benchmarks.soak;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.rdmashuffle.benchmarks.cluster.ClusterBed;

/**
 * The hostile-tenant soak, CI-sized ({@code bin/soak --phase-seconds 25 --warmup-seconds 8}: 130-140 s
 * here): on three hosts of the cluster bed, a well-behaved application fetches from the
 * NodeManager's RDMA service for Spark while another application cycles through the suite's network
 * attacks, in phases attacker-free, attacked, attacker-free, attacked. docs/soak.md.
 */
class HostileTenantSoakTest {
    /**
     * The victim's p99 attacked over its p99 attacker-free, per pair of phases, must stay below this.
     * The goal is 2. On this 2-core machine the service, the victim, the attacker (and the
     * build) share both cores and the victim alone keeps them busy, so every attack's CPU shows in the
     * victim's tail: eight sittings measured 1.12 to 3.28 (the first attacked phase, which also pays
     * the first run of every attack's code, 1.77 to 3.28; the second 1.12 to 2.05); docs/soak.md lists
     * them. 5 is half as much again as the worst; a service that stalls (a held thread, a lost
     * wake-up) puts hundreds of milliseconds into the p99 and ratios in the tens.
     */
    static final double P99_RATIO_BOUND = 5.0;

    @Test
    void aWellBehavedApplicationIsServedThroughEveryAttack_andNoResourceOfTheServiceGrowsWithThem() throws Exception {
        String cause = ClusterBed.unavailabilityCause();
        if (cause != null && "true".equals(System.getenv("CI"))) {
            throw new AssertionError("CI must run the hostile-tenant soak, but " + cause);
        }
        Assumptions.assumeTrue(cause == null, () -> "no cluster bed here: " + cause + " (run as root with iproute2)");

        SoakReport r = HostileTenantSoak.run(new HostileTenantSoak.Options(25, 8, 0, null), System.out);
        String text = r.text();
        assertNull(r.aborted(), text);
        assertTrue(r.phases().keySet().containsAll(HostileTenantSoak.MEASURED), text);
        assertEquals(0, r.failures(), "blocks the victim failed to fetch (or got wrong):\n" + text);
        assertTrue(r.attacks().runs() > 0, "no attack ran:\n" + text);
        assertEquals(0, r.attacks().unexpected(), "an attack did what docs/security.md says it cannot:\n" + text);
        assertEquals(0, r.serviceLogLines()[2], "SEVERE lines in the service's log (a handler that threw: a bug):\n" + text);
        for (SoakReport.Resource res : r.resources()) {
            assertTrue(res.flat(), res.tolerance().resource() + " grew across the attacked phases:\n" + text);
        }
        assertTrue(r.flat(), text);
        for (int pair = 1; pair <= 2; pair++) {
            double ratio = r.p99Ratio(pair);
            System.out.printf("p99 attacked/free, pair %d: %.2f (bound %.1f)%n", pair, ratio, P99_RATIO_BOUND);
            assertTrue(ratio < P99_RATIO_BOUND, "the victim's p99 under attack, pair " + pair + ": " + ratio + "x:\n" + text);
        }
        assertEquals(List.of(), r.leftNamespaces(), "namespaces left behind");
        assertEquals(List.of(), r.leftProcesses(), "processes left behind");
    }
}
