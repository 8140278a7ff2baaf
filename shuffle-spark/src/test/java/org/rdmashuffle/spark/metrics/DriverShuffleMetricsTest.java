package org.rdmashuffle.spark.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.TreeMap;

import com.codahale.metrics.MetricRegistry;
import org.junit.jupiter.api.Test;

/** The driver's view from its executors' reports: reports out of order, messages of the wrong type, fallback kinds. */
class DriverShuffleMetricsTest {
    /** An executor on a device ({@code mlx5_0} through ibverbs), or fallen back when {@code fallback} is set. */
    private static ExecutorShuffleReport report(String id, long seq, String fallback, long rdmaBlocks) {
        return report(id, seq, fallback, "ibverbs", "mlx5_0", "", rdmaBlocks);
    }

    private static ExecutorShuffleReport report(String id, long seq, String fallback, String provider, String device,
                                                String softwareDevice, long engineBlocks) {
        return new ExecutorShuffleReport(id, seq, fallback, fallback == null ? provider : "", fallback == null ? device : "",
                softwareDevice, "", "pinned", -1, engineBlocks, engineBlocks * 100, 3, 300, new TreeMap<>(), 0, 0, 0, 0, 0,
                new TreeMap<>(), Map.of("10.0.0.2", engineBlocks));
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

    /**
     * Three carriers, never confused (issue 53): a hardware device, a kernel software device (rxe) and the software
     * provider each counted apart; RDMA's counts and bytes are the devices' only; and neither the driver's lines nor
     * its per-executor description call the software provider or Spark's transport RDMA.
     */
    @Test
    void theThreeCarriers_areCountedApart_andOnlyDevicesAreCalledRdma() {
        MetricRegistry registry = new MetricRegistry();
        DriverShuffleMetrics m = new DriverShuffleMetrics(registry, true);
        m.receive(report("1", 1, null, "ibverbs", "mlx5_0", "", 10));
        m.receive(report("2", 1, null, "ibverbs", "rxe0", "rxe", 20));
        m.receive(report("3", 1, null, "software", "soft0", "", 40));
        m.receive(report("4", 1, null, "software", "soft0", "", 80));
        m.receive(report("5", 1, "VerbsUnavailableException: RS01 no-device: saw libibverbs lists no RDMA device; needs x; fix: y",
                "", "", "", 0));
        assertEquals(5, gauge(registry, "executors.reporting"));
        assertEquals(2, gauge(registry, "executors.onRdma"), "devices only, the kernel's software device among them");
        assertEquals(1, gauge(registry, "executors.onSoftwareDevice"));
        assertEquals(2, gauge(registry, "executors.onSoftwareProvider"));
        assertEquals(1, gauge(registry, "executors.fallenBack"));
        assertEquals(1, gauge(registry, "executors.fallenBack.no-device"));
        assertEquals(30, gauge(registry, "rdma.blocks"));
        assertEquals(3000, gauge(registry, "rdma.bytes"));
        assertEquals(120, gauge(registry, "softwareProvider.blocks"));
        assertEquals(12000, gauge(registry, "softwareProvider.bytes"));
        assertEquals(15, gauge(registry, "fallback.blocks"));
        assertEquals(0, gauge(registry, "executor.3.onRdma"));
        assertEquals(1, gauge(registry, "executor.3.onSoftwareProvider"));
        assertEquals(0, gauge(registry, "executor.3.rdma.bytes"));
        assertEquals(4000, gauge(registry, "executor.3.softwareProvider.bytes"));
        assertEquals(1, gauge(registry, "executor.2.onRdma"));
        assertEquals(2000, gauge(registry, "executor.2.rdma.bytes"));
        assertEquals(40, gauge(registry, "executor.3.softwareProvider.from.10_0_0_2.blocks"));
        assertFalse(registry.getGauges().containsKey("executor.3.rdma.from.10_0_0_2.blocks"), "no RDMA per link on TCP");

        java.util.List<String> lines = m.describe();
        assertEquals(5, lines.size(), lines.toString());
        assertEquals("1: RDMA over device mlx5_0, 10 blocks / 1000 bytes over RDMA, 3 blocks / 300 bytes over the built-in "
                + "transport", lines.get(0));
        assertTrue(lines.get(1).startsWith("2: RDMA over software device rxe0 (rxe: RoCE done by the kernel, no RDMA NIC), 20 "
                + "blocks / 2000 bytes over RDMA"), lines.get(1));
        assertEquals("3: the software provider (RC over TCP in the JVM, not RDMA) on soft0, 40 blocks / 4000 bytes over the "
                + "software provider (TCP), 3 blocks / 300 bytes over the built-in transport", lines.get(2));
        assertTrue(lines.get(4).startsWith("5: Spark's built-in transport (VerbsUnavailableException: RS01 no-device"), lines.get(4));
        for (String line : java.util.List.of(lines.get(2), lines.get(3), lines.get(4))) {
            assertFalse(line.replace("not RDMA", "").replace("no RDMA device", "").contains("RDMA"),
                    "only a device is called RDMA: " + line);
        }
    }
}
