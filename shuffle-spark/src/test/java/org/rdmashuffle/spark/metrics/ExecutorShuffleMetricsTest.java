package org.rdmashuffle.spark.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import java.util.TreeMap;

import com.codahale.metrics.MetricRegistry;
import org.junit.jupiter.api.Test;

/** An executor's own gauges name its carrier: RDMA for a verbs device only, the software provider apart. */
class ExecutorShuffleMetricsTest {
    private static ExecutorShuffleReport report(String fallback, String provider, String device, String softwareDevice) {
        return new ExecutorShuffleReport("7", 0, fallback, provider, device, softwareDevice, "", "pinned", -1, 12, 1200, 2, 200,
                new TreeMap<>(), 0, 0, 0, 0, 0, new TreeMap<>(), Map.of());
    }

    private static long gauge(MetricRegistry r, String name) {
        return (Long) r.getGauges().get(name).getValue();
    }

    /** The gauges of one executor whose report is {@code r} (no engine figures: only the report's are read here). */
    private static MetricRegistry gaugesOf(ExecutorShuffleReport r) {
        MetricRegistry registry = new MetricRegistry();
        try (ExecutorShuffleMetrics m = new ExecutorShuffleMetrics(registry, "7", (id, seq) -> r, () -> null, x -> { }, 60_000)) {
            return registry;
        }
    }

    @Test
    void onTheSoftwareProvider_nothingSaysRdma_andItsOwnGaugesCountTheBytes() {
        MetricRegistry r = gaugesOf(report(null, "software", "soft0", ""));
        assertEquals(0, gauge(r, "carrier.rdma"));
        assertEquals(1, gauge(r, "carrier.softwareProvider"));
        assertEquals(0, gauge(r, "carrier.softwareDevice"));
        assertEquals(0, gauge(r, "rdma.blocks"));
        assertEquals(0, gauge(r, "rdma.bytes"));
        assertEquals(12, gauge(r, "softwareProvider.blocks"));
        assertEquals(1200, gauge(r, "softwareProvider.bytes"));
        assertEquals(0, gauge(r, "carrier.fallbackCode"));
    }

    @Test
    void onADevice_rdmaCountsIt_namingAKernelSoftwareDevice() {
        MetricRegistry rxe = gaugesOf(report(null, "ibverbs", "rxe0", "rxe"));
        assertEquals(1, gauge(rxe, "carrier.rdma"));
        assertEquals(1, gauge(rxe, "carrier.softwareDevice"));
        assertEquals(0, gauge(rxe, "carrier.softwareProvider"));
        assertEquals(1200, gauge(rxe, "rdma.bytes"));
        assertEquals(0, gauge(rxe, "softwareProvider.bytes"));
        MetricRegistry hca = gaugesOf(report(null, "ibverbs", "mlx5_0", ""));
        assertEquals(1, gauge(hca, "carrier.rdma"));
        assertEquals(0, gauge(hca, "carrier.softwareDevice"));
    }

    @Test
    void fallenBack_neitherCarrierOfTheEngine() {
        MetricRegistry r = gaugesOf(report("VerbsUnavailableException: RS03 memlock: saw x; needs y; fix: z", "", "", ""));
        assertEquals(0, gauge(r, "carrier.rdma"));
        assertEquals(0, gauge(r, "carrier.softwareProvider"));
        assertEquals(3, gauge(r, "carrier.fallbackCode"));
        assertEquals(0, gauge(r, "rdma.bytes"));
        assertEquals(0, gauge(r, "softwareProvider.bytes"));
        assertEquals(200, gauge(r, "fallback.bytes"));
    }
}
