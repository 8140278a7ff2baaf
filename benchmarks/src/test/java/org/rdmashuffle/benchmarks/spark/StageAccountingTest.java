package org.rdmashuffle.benchmarks.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import scala.Tuple2;

/**
 * The per-stage accounting the main job and the TPC-DS runner print: a job's stages, and only its,
 * with its tasks' figures summed per stage; the comparison of runs takes medians of per-round ratios.
 */
class StageAccountingTest {
    @Test
    void aJobsStagesAreCounted_withTheirTasksFiguresSummed_andNothingOutsideTheWindow() throws Exception {
        SparkConf conf = new SparkConf().setMaster("local[2]").setAppName("stage accounting")
                .set("spark.ui.enabled", "false").set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1");
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            StageAccounting accounting = new StageAccounting();
            sc.sc().addSparkListener(accounting);
            sc.parallelize(List.of(1, 2, 3), 3).count(); // before the window
            sc.sc().listenerBus().waitUntilEmpty();
            accounting.begin();
            int rows = 10_000;
            long keys = sc.parallelize(IntStream.range(0, rows).boxed().toList(), 3)
                    .mapToPair(i -> new Tuple2<>(i % 97, i)).groupByKey(4).count();
            sc.sc().listenerBus().waitUntilEmpty();
            accounting.end();
            sc.parallelize(List.of(1, 2), 2).count(); // after it
            sc.sc().listenerBus().waitUntilEmpty();

            assertEquals(97, keys);
            List<StageAccounting.Stage> stages = accounting.stages();
            assertEquals(2, stages.size(), stages.toString());
            StageAccounting.Stage map = stages.get(0);
            StageAccounting.Stage reduce = stages.get(1);
            assertEquals(3, map.tasks());
            assertEquals(4, reduce.tasks());
            assertEquals(rows, map.recordsWritten());
            assertEquals(rows, reduce.recordsRead());
            assertTrue(map.bytesWritten() > 0 && map.bytesWritten() == reduce.bytesRead(), map + " / " + reduce);
            assertEquals(0, map.recordsRead());
            assertTrue(map.durationMs() >= 0 && reduce.durationMs() >= 0 && map.runMs() >= 0 && map.cpuMs() >= 0, map.toString());
            assertEquals("mapToPair", map.shortName());

            for (StageAccounting.Stage s : stages) {
                assertEquals(s, StageAccounting.parse(StageAccounting.line(s)));
            }
            List<StageAccounting.Window> windows = accounting.windows();
            assertEquals(List.of(map.id(), reduce.id()), windows.stream().map(StageAccounting.Window::id).toList());
            for (int i = 0; i < windows.size(); i++) {
                StageAccounting.Window w = windows.get(i);
                assertEquals(stages.get(i).durationMs(), w.completedMs() - w.submittedMs(), w.toString());
                assertEquals(Map.entry("round 1 rdma", w), StageAccounting.Window.parse("    " + w.line("round 1 rdma")));
            }
            assertTrue(windows.get(0).completedMs() <= windows.get(1).submittedMs(), windows.toString());
            assertEquals(null, StageAccounting.Window.parse("    stage 1 collect: 4 tasks"));
            StageAccounting.Stage total = StageAccounting.total("job", stages);
            assertEquals(7, total.tasks());
            assertEquals(map.bytesWritten(), total.bytesWritten());
        }
    }

    @Test
    void theComparisonTakesTheMedianOfPerRoundRatios_perStage() {
        // Two rounds: the rdma run's task time 0.5x and then 1.5x the built-in's; median 1.00. Fetch wait
        // 0.2x and 0.4x: 0.30.
        List<Map<String, List<StageAccounting.Stage>>> rounds = List.of(
                Map.of("builtin", List.of(stage(100, 10)), "rdma", List.of(stage(50, 2))),
                Map.of("builtin", List.of(stage(200, 10)), "rdma", List.of(stage(300, 4))));
        String table = StageComparison.table(rounds, List.of("builtin", "rdma"), "builtin",
                Map.of("builtin", "built-in", "rdma", "rdma-shuffle"));
        String ratioRow = table.lines().filter(l -> l.contains("rdma-shuffle / built-in")).findFirst().orElseThrow();
        String[] cells = ratioRow.split("\\|");
        int runColumn = 4 + StageAccounting.HEADERS.indexOf("task run ms");
        int waitColumn = 4 + StageAccounting.HEADERS.indexOf("fetch wait ms");
        assertEquals("1.00", cells[runColumn].trim(), table);
        assertEquals("0.30", cells[waitColumn].trim(), table);
        String medianRow = table.lines().filter(l -> l.contains("| rdma-shuffle |")).findFirst().orElseThrow();
        assertEquals("175", medianRow.split("\\|")[runColumn].trim(), table);

        List<Map<String, List<StageAccounting.Stage>>> uneven = List.of(
                Map.of("builtin", List.of(stage(1, 1)), "rdma", List.of(stage(1, 1), stage(1, 1))));
        assertTrue(StageComparison.table(uneven, List.of("builtin", "rdma"), "builtin", Map.of("builtin", "b", "rdma", "r"))
                .contains("not compared"));
    }

    private static StageAccounting.Stage stage(long runMs, long fetchWaitMs) {
        return new StageAccounting.Stage(1, "groupByKey at X.java:1", 4, runMs, runMs, runMs, 0, 0, 0, 0, fetchWaitMs, 1, 1, 1, 1);
    }
}
