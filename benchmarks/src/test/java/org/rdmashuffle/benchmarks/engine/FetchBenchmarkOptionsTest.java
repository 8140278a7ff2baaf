package org.rdmashuffle.benchmarks.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;

/** benchmarks/fetch-benchmark.sh: the documented runs parse; bad workloads, counts and settings are refused naming them. */
class FetchBenchmarkOptionsTest {
    @Test
    void theDocumentedRuns_parse() {
        FetchBenchmark.Options o = FetchBenchmark.Options.parse("--rounds", "5", "--csv", "benchmarks/results/engine-fetch.csv",
                "--batch", "10", "--heap-by-layer", "--variant", "busyPoll=0", "--server-variant", "memoryWindows=true");
        assertEquals(5, o.rounds());
        assertEquals(Path.of("benchmarks/results/engine-fetch.csv"), o.csv());
        assertEquals(10, o.batch());
        assertTrue(o.heapByLayer());
        assertEquals("busyPoll=0", o.variant());
        assertEquals("memoryWindows=true", o.serverVariant());
        assertEquals(List.of("2000x256k", "50000x4k"), o.workloads().stream().map(FetchWorkload::name).toList());
        FetchBenchmark.Options two = FetchBenchmark.Options.parse("--rounds", "3", "100000x512", "50000x4k");
        assertEquals(List.of(100, 50), two.workloads().stream().map(FetchWorkload::maps).toList());
        assertEquals(512, two.workloads().get(0).blockBytes());
    }

    @Test
    void badValues_areRefusedNamingThem() {
        assertEquals("--rounds must be at least 1, not 0", refused("--rounds", "0"));
        assertEquals("--batch takes a whole number, not 'ten'", refused("--batch", "ten"));
        assertEquals("--batch 3 does not divide workload 2000x256k's 100 partitions per map", refused("--batch", "3"));
        assertEquals("workload '2000x' is not BLOCKSxSIZE, e.g. 2000x256k or 100000x512", refused("2000x"));
        assertEquals("workload '2001x256k': the block count must be a multiple of 100", refused("2001x256k"));
        assertEquals("--variant takes key=value[,key=value] engine settings, not 'busyPoll'", refused("--variant", "busyPoll"));
        assertTrue(refused("--variant", "noSuchKey=1").startsWith("--variant noSuchKey=1: "), refused("--variant", "noSuchKey=1"));
        assertTrue(refused("--no-such-flag").startsWith("unknown argument --no-such-flag"));
    }

    private static String refused(String... args) {
        return assertThrows(IllegalArgumentException.class, () -> FetchBenchmark.Options.parse(args)).getMessage();
    }
}
