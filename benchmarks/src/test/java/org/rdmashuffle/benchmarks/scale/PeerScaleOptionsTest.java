package org.rdmashuffle.benchmarks.scale;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** benchmarks/scale-benchmark.sh: the documented run parses; bad counts are refused naming them. */
class PeerScaleOptionsTest {
    @Test
    void theDocumentedRun_parses() {
        PeerScaleBenchmark.Options o = PeerScaleBenchmark.Options.parse("--peers", "10,100,400", "--jvms", "4");
        assertArrayEquals(new int[] {10, 100, 400}, o.peerCounts());
        assertEquals(4, o.jvms());
    }

    @Test
    void badValues_areRefusedNamingThem() {
        assertEquals("--peers takes counts of at least 1 such as 10,100,400, not '10,0'", refused("--peers", "10,0"));
        assertEquals("--peers takes counts of at least 1 such as 10,100,400, not '10,,20'", refused("--peers", "10,,20"));
        assertEquals("--jvms must be 1..62500, not -2", refused("--jvms", "-2"));
        assertTrue(refused("--no-such-flag").startsWith("unknown argument --no-such-flag"));
    }

    private static String refused(String... args) {
        return assertThrows(IllegalArgumentException.class, () -> PeerScaleBenchmark.Options.parse(args)).getMessage();
    }
}
