package org.rdmashuffle.benchmarks.tpcds;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.benchmarks.spark.StageAccounting;

/**
 * Keeps the TPC-DS runner working: two small queries at a tiny scale, both shuffles, results
 * compared, what carried the remote bytes on each side recorded, outputs written. The full runs stay
 * out of CI (benchmarks/tpcds.sh).
 */
class TpcdsSmokeTest {
    @TempDir
    Path dir;

    @Test
    void twoQueriesAtATinyScale_onePair_matchTheBuiltInShuffle() throws Exception {
        // One pair (two rounds, each query in both orders) with the shuffle partitions set: what --pairs and
        // --shuffle-partitions do.
        List<TpcdsRunner.Outcome> outcomes = TpcdsRunner.run(0.01, "q3,q42", 1, 5, dir.resolve("data"), dir.resolve("out"));
        assertEquals(List.of("q3", "q42", "q3", "q42"), outcomes.stream().map(TpcdsRunner.Outcome::query).toList());
        for (TpcdsRunner.Outcome o : outcomes) {
            assertEquals("match", o.verdict(), o.query());
            assertTrue(o.builtinRows() > 0 && o.builtinRows() == o.rdmaRows() && o.shuffleReadBytes() > 0, o.toString());
            // Whether a query at this scale reads anything remotely depends on where Spark puts its reduce
            // tasks; that remote blocks do come over RDMA is MainJobAcrossHostsTest's (against Spark's count).
            assertTrue(o.rdma().fallbackBytes() == 0 && o.rdma().fallbackBlocks() == 0,
                    "nothing over Spark's transport on the rdma side: " + o);
            assertEquals(0, o.builtin().rdmaBytes(), "nothing over the engine on the built-in side: " + o);
            // Every stage of the query counted on both sides: their shuffle reads add up to Spark's own count.
            assertTrue(!o.builtinStages().isEmpty() && o.builtinStages().size() == o.rdmaStages().size(), o.toString());
            assertEquals(o.shuffleReadBytes(), StageAccounting.total("built-in", o.builtinStages()).bytesRead(), o.toString());
        }
        for (String round : List.of("round-1", "round-2")) {
            Path out = dir.resolve("out").resolve(round);
            String md = Files.readString(out.resolve("results.md"));
            assertTrue(md.contains("Where the time went, per query") && md.contains("spark.sql.shuffle.partitions=5"), md);
            for (String f : List.of("results.csv", "stages.csv", "results.md", "time-ratio.png", "total-time.png", "shuffle-bytes.png")) {
                assertTrue(Files.size(out.resolve(f)) > 0, round + "/" + f);
            }
        }
        // Every round's time of every query kept beside the pair's ratio.
        List<String> csv = Files.readAllLines(dir.resolve("out").resolve("rounds.csv"));
        assertEquals(5, csv.size(), String.join("\n", csv));
        for (TpcdsRunner.Outcome o : outcomes) {
            assertTrue(csv.stream().anyMatch(l -> l.startsWith(o.query() + ",") && l.contains("," + o.builtinMs() + "," + o.rdmaMs() + ",")),
                    o.query() + " " + o.builtinMs() + "/" + o.rdmaMs() + " in " + csv);
        }
        assertTrue(Files.readString(dir.resolve("out").resolve("rounds.md")).contains("1 pair (2 rounds)"));
    }
}
