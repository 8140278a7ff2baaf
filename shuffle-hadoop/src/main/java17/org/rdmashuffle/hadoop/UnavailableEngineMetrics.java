package org.rdmashuffle.hadoop;

import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsInfo;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.metrics2.lib.Interns;
import org.rdmashuffle.verbs.Trouble;

/**
 * A NodeManager service's metrics2 source when its engine could not start: {@code EngineRunning} 0,
 * {@code UnavailableCode} and the tag {@code Reason}, under the record name the running engine's
 * source ({@code ServiceMetrics}) uses, so a dashboard finds either. Built for Java 17
 * (src/main/java17): it is what a NodeManager on a JVM too old for the engine publishes.
 */
final class UnavailableEngineMetrics implements MetricsSource {
    static final MetricsInfo ENGINE_RUNNING = Interns.info("EngineRunning",
            "1: the RDMA engine serves this node's outputs; 0: it could not start (Reason says why)");
    static final MetricsInfo UNAVAILABLE_CODE = Interns.info("UnavailableCode",
            "why the RDMA engine could not start: the RS code's number (docs/troubleshooting.md), 99 for another reason, 0 when it runs");
    static final MetricsInfo REASON = Interns.info("Reason", "why the RDMA engine could not start");
    static final MetricsInfo OVER_RDMA_DEVICE = Interns.info("OverRdmaDevice",
            "1: the engine serves over a verbs device (RDMA: an HCA, or a kernel software device such as rxe; tags Device, SoftwareDevice)");
    static final MetricsInfo OVER_SOFTWARE_PROVIDER = Interns.info("OverSoftwareProvider",
            "1: the engine serves over the software provider (RC over TCP in the JVM, not RDMA)");

    private final String record;
    private final String reason;

    private UnavailableEngineMetrics(String record, String reason) {
        this.record = record;
        this.reason = reason;
    }

    /** Publishes, as source {@code record}, that the service's engine could not start and why. */
    static UnavailableEngineMetrics register(String record, String description, String reason) {
        UnavailableEngineMetrics m = new UnavailableEngineMetrics(record, reason);
        DefaultMetricsSystem.instance().register(record, description, m);
        return m;
    }

    void unregister() {
        DefaultMetricsSystem.instance().unregisterSource(record);
    }

    /** {@code UnavailableCode}: the number of the RS code {@code reason} names, 99 for none. */
    static long unavailableCode(String reason) {
        return Trouble.in(reason).map(t -> (long) Integer.parseInt(t.code().substring(2))).orElse(99L);
    }

    @Override
    public void getMetrics(MetricsCollector collector, boolean all) {
        collector.addRecord(record).setContext("rdma-shuffle").tag(REASON, reason)
                .addGauge(ENGINE_RUNNING, 0).addGauge(UNAVAILABLE_CODE, unavailableCode(reason))
                .addGauge(OVER_RDMA_DEVICE, 0).addGauge(OVER_SOFTWARE_PROVIDER, 0);
    }
}
