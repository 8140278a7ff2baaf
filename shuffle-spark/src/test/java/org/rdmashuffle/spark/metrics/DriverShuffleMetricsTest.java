package org.rdmashuffle.spark.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.Map;
import java.util.TreeMap;

import com.codahale.metrics.MetricRegistry;
import org.junit.jupiter.api.Test;

/** The driver's view from its executors' reports: reports out of order, messages of the wrong type, fallback kinds. */
class DriverShuffleMetricsTest {
    private static ExecutorShuffleReport report(String id, long seq, String fallback, long rdmaBlocks) {
        return new ExecutorShuffleReport(id, seq, fallback, "software", "soft0", "", "pinned", -1, rdmaBlocks, rdmaBlocks * 100,
                0, 0, new TreeMap<>(), 0, 0, 0, 0, 0, new TreeMap<>(), Map.of("10.0.0.2", rdmaBlocks));
    }

    private static long gauge(MetricRegistry r, String name) {
        return (Long) r.getGauges().get(name).getValue();
    }

    @Test
    void anOlderReportArrivingLate_doesNotUndoANewerOne_andAnythingElseIsIgnored() {
        MetricRegistry registry = new MetricRegistry();
        DriverShuffleMetrics m = new DriverShuffleMetrics(registry, true);
        m.receive(report("1", 2, null, 50));
        m.receive(report("1", 1, null, 10)); // sent before, delivered after
        assertFalse(m.receive("not a report"));
        assertEquals(50, gauge(registry, "rdma.blocks"));
        assertEquals(50, gauge(registry, "executor.1.rdma.blocks"));
        assertEquals(50, gauge(registry, "executor.1.rdma.from.10_0_0_2.blocks"));
    }

    @Test
    void fallenBackExecutors_areCountedByTheTroubleTheirReasonNames_startingOnesNot() {
        MetricRegistry registry = new MetricRegistry();
        DriverShuffleMetrics m = new DriverShuffleMetrics(registry, false);
        m.receive(report("1", 1, "VerbsUnavailableException: RS03 memlock: saw memlock limit is 8 MiB; needs 64 MiB; fix: x", 0));
        m.receive(report("2", 1, ExecutorShuffleReport.STARTING, 0));
        m.receive(report("3", 1, "something no code names", 0));
        m.receive(report("4", 1, null, 7));
        assertEquals(2, gauge(registry, "executors.fallenBack"));
        assertEquals(1, gauge(registry, "executors.fallenBack.memlock"));
        assertEquals(1, gauge(registry, "executors.fallenBack.other"));
        assertEquals(1, gauge(registry, "executors.onRdma"));
        assertEquals(3, gauge(registry, "executor.1.fallbackCode"));
        assertEquals(0, gauge(registry, "executor.2.fallbackCode"));
        assertEquals(99, gauge(registry, "executor.3.fallbackCode"));
        assertFalse(registry.getGauges().containsKey("executor.4.rdma.from.10_0_0_2.blocks"), "per link only when asked for");
    }
}
