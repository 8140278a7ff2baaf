package org.rdmashuffle.benchmarks.soak;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** bin/soak: the documented runs parse (the warm-up follows the phase); bad values are refused naming them. */
class HostileTenantSoakOptionsTest {
    @Test
    void theDocumentedRuns_parse() {
        assertEquals(new HostileTenantSoak.Options(60, 15, 0, null), HostileTenantSoak.Options.parse());
        assertEquals(new HostileTenantSoak.Options(600, 15, 19, null),
                HostileTenantSoak.Options.parse("--phase-seconds", "600", "--attacker-nice", "19"));
        assertEquals(new HostileTenantSoak.Options(10, 10, 0, null), HostileTenantSoak.Options.parse("--phase-seconds", "10"));
        assertEquals(0, HostileTenantSoak.Options.parse("--warmup-seconds", "0").warmupSeconds());
    }

    @Test
    void badValues_areRefusedNamingThem() {
        assertEquals("--phase-seconds must be at least 1, not 0", refused("--phase-seconds", "0"));
        assertEquals("--warmup-seconds must be at least 0, not -1", refused("--warmup-seconds", "-1"));
        assertEquals("--attacker-nice must be -20..19, not 25", refused("--attacker-nice", "25"));
        assertEquals("--attacker-nice takes a whole number, not 'low'", refused("--attacker-nice", "low"));
        assertEquals("--run-dir needs a value", refused("--run-dir"));
    }

    private static String refused(String... args) {
        return assertThrows(IllegalArgumentException.class, () -> HostileTenantSoak.Options.parse(args)).getMessage();
    }
}
