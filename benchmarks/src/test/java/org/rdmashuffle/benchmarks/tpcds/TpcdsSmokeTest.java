package org.rdmashuffle.benchmarks.tpcds;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Keeps the TPC-DS runner working: two small queries at a tiny scale, both shuffles, results
 * compared, outputs written. The full runs stay out of CI (benchmarks/tpcds.sh).
 */
class TpcdsSmokeTest {
    @TempDir
    Path dir;

    @Test
    void twoQueriesAtATinyScale_matchTheBuiltInShuffle() throws Exception {
        List<TpcdsRunner.Outcome> outcomes = TpcdsRunner.run(0.01, "q3,q42", dir.resolve("data"), dir.resolve("out"));
        assertEquals(List.of("q3", "q42"), outcomes.stream().map(TpcdsRunner.Outcome::query).toList());
        for (TpcdsRunner.Outcome o : outcomes) {
            assertEquals("match", o.verdict(), o.query());
            assertTrue(o.rows() > 0 && o.shuffleReadBytes() > 0, o.toString());
        }
        for (String f : List.of("results.csv", "results.md", "time-ratio.png", "total-time.png", "shuffle-bytes.png")) {
            assertTrue(Files.size(dir.resolve("out").resolve(f)) > 0, f);
        }
    }
}
