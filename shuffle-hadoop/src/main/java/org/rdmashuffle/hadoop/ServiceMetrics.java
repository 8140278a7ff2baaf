package org.rdmashuffle.hadoop;

import java.util.Map;

import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsInfo;
import org.apache.hadoop.metrics2.MetricsRecordBuilder;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.lib.Interns;
import org.rdmashuffle.core.EngineCounters;
import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.metrics.EngineMetrics;
import org.rdmashuffle.core.metrics.Refusal;
import org.rdmashuffle.core.metrics.ServedCounts;
import org.rdmashuffle.verbs.Carrier;
import org.rdmashuffle.verbs.WorkCompletionStatus;

/**
 * A service engine's figures as a metrics2 source (context {@code rdma-shuffle}; record {@code
 * RdmaShuffleService} for MapReduce's, {@code RdmaSparkShuffleService} for Spark's, each with a
 * record per application served now): what the NodeManager's JMX servlet ({@code /jmx}) and any
 * metrics2 sink show, and what the node's Prometheus exposition ({@link NodeExposition}) translates.
 * docs/metrics.md lists them. The node's record says what carries the bytes: tags {@code Provider},
 * {@code Device}, {@code SoftwareDevice}, and {@code OverRdmaDevice} or {@code OverSoftwareProvider} 1
 * (the software provider is never counted as RDMA). Where the engine could not start, the service
 * publishes {@link UnavailableEngineMetrics} under the same record name instead.
 */
final class ServiceMetrics implements MetricsSource {
    static final MetricsInfo SERVING_CONNECTIONS = Interns.info("ServingConnections", "reducer connections being served");
    static final MetricsInfo REGISTERED_BYTES = Interns.info("RegisteredMapOutputBytes",
            "bytes of map output registered as memory regions");
    static final MetricsInfo RECEIVES_POSTED = Interns.info("ReceivesPosted", "receive buffers posted to the SRQ");
    static final MetricsInfo LOW_WATER_EVENTS = Interns.info("ReceiveLowWaterEvents",
            "times the SRQ ran low on posted receives");
    static final MetricsInfo SENDS_IN_FLIGHT = Interns.info("SendsInFlight", "responses being sent");
    static final MetricsInfo RESOLVED = Interns.info("MapOutputsResolved",
            "map outputs found on the node's disks and registered for reducers");
    static final MetricsInfo COMPLETIONS = Interns.info("Completions", "work completions polled");
    static final MetricsInfo TENANTS = Interns.info("Applications", "applications with outputs or connections here now");
    static final MetricsInfo QUEUE_PAIRS = Interns.info("QueuePairs", "queue pairs of reducer connections");
    static final MetricsInfo REQUESTS = Interns.info("ServedRequests", "fetch requests answered");
    static final MetricsInfo BLOCKS = Interns.info("ServedBlocks", "blocks described to reducers (read by them one-sidedly)");
    static final MetricsInfo BYTES = Interns.info("ServedBytes", "bytes of the blocks described to reducers");
    static final MetricsInfo REFUSED = Interns.info("RefusedRequests", "fetch requests refused, every kind");
    static final MetricsInfo REGISTRATIONS = Interns.info("Registrations", "map output files registered");
    static final MetricsInfo REGISTRATION_MILLIS = Interns.info("RegistrationMillis", "time spent registering map outputs");
    static final MetricsInfo REGISTRATION_FAILURES = Interns.info("RegistrationFailures", "map output registrations that failed");
    static final MetricsInfo REGISTRATION_EVICTIONS = Interns.info("RegistrationEvictions",
            "map output regions deregistered to make room under the registered-memory limits (registered again if asked for again)");
    static final MetricsInfo COMPLETION_ERRORS = Interns.info("CompletionErrors", "work completions that failed, every status");
    static final MetricsInfo MEMLOCK = Interns.info("MemlockLimitBytes", "the memlock limit the engine runs under (-1: none)");
    static final MetricsInfo REGISTERED_LIMIT = Interns.info("RegisteredMemoryLimitBytes",
            "the most map-output bytes the engine registers at once (registeredMemoryLimit)");
    static final MetricsInfo PROVIDER = Interns.info("Provider", "the verbs provider the engine runs on: ibverbs or software");
    static final MetricsInfo DEVICE = Interns.info("Device", "the device the engine opened (soft0: the software provider's)");
    static final MetricsInfo SOFTWARE_DEVICE = Interns.info("SoftwareDevice",
            "which kernel software device that is (rxe, siw), empty for a hardware one or the software provider's");
    static final MetricsInfo APPLICATION = Interns.info("Application", "the application these figures are of");
    /** Per-application records' name (one record per application, tagged {@code Application}). */
    static final String APPLICATION_RECORD_SUFFIX = "Application";

    private final String record;
    private final RdmaShuffleEngine engine;
    private final java.util.function.LongSupplier resolved;

    /** Publishes {@code engine}'s counters as source {@code record} in the NodeManager's metrics system. */
    static ServiceMetrics register(String record, String description, RdmaShuffleEngine engine,
                                   java.util.function.LongSupplier resolved) {
        ServiceMetrics m = new ServiceMetrics(record, engine, resolved);
        org.apache.hadoop.metrics2.lib.DefaultMetricsSystem.instance().register(record, description, m);
        return m;
    }

    void unregister() {
        org.apache.hadoop.metrics2.lib.DefaultMetricsSystem.instance().unregisterSource(record);
    }

    private ServiceMetrics(String record, RdmaShuffleEngine engine, java.util.function.LongSupplier resolved) {
        this.record = record;
        this.engine = engine;
        this.resolved = resolved;
    }

    /**
     * One record of the node's totals ({@code record}), then one per application served now ({@code
     * record + "Application"}, tagged {@code Application}): what it was served and refused. Refusals
     * and failed completions also by kind ({@code Refused<Kind>}, {@code CompletionErrors<STATUS>}),
     * failed registrations by errno ({@code RegistrationFailures<ERRNO>}).
     */
    @Override
    public void getMetrics(MetricsCollector collector, boolean all) {
        EngineMetrics m = engine.metrics();
        EngineCounters c = m.now();
        boolean softwareProvider = Carrier.ofProvider(m.provider()) == Carrier.SOFTWARE_PROVIDER;
        MetricsRecordBuilder node = collector.addRecord(record).setContext("rdma-shuffle")
                .tag(PROVIDER, m.provider()).tag(DEVICE, m.device()).tag(SOFTWARE_DEVICE, m.softwareDevice())
                .addGauge(UnavailableEngineMetrics.ENGINE_RUNNING, 1).addGauge(UnavailableEngineMetrics.UNAVAILABLE_CODE, 0)
                .addGauge(UnavailableEngineMetrics.OVER_RDMA_DEVICE, softwareProvider ? 0 : 1)
                .addGauge(UnavailableEngineMetrics.OVER_SOFTWARE_PROVIDER, softwareProvider ? 1 : 0)
                .addGauge(REGISTERED_LIMIT, engine.config().registeredMemoryLimit())
                .addGauge(SERVING_CONNECTIONS, c.servingConnections())
                .addGauge(REGISTERED_BYTES, c.registeredMapOutputBytes())
                .addGauge(RECEIVES_POSTED, c.receivesPosted())
                .addGauge(SENDS_IN_FLIGHT, c.sendsInFlight())
                .addGauge(TENANTS, engine.tenants())
                .addGauge(QUEUE_PAIRS, c.queuePairs())
                .addGauge(MEMLOCK, m.pinnableBytes())
                .addCounter(LOW_WATER_EVENTS, c.receiveLowWaterEvents())
                .addCounter(RESOLVED, resolved.getAsLong())
                .addCounter(COMPLETIONS, c.completions())
                .addCounter(REGISTRATIONS, m.mapOutputRegistrations().count())
                .addCounter(REGISTRATION_MILLIS, m.mapOutputRegistrations().nanos() / 1_000_000)
                .addCounter(REGISTRATION_FAILURES, m.mapOutputRegistrations().failures())
                .addCounter(REGISTRATION_EVICTIONS, m.mapOutputRegistrations().evictions());
        served(node, m.served());
        m.mapOutputRegistrations().failuresByErrno().forEach((errno, n) ->
                node.addCounter(Interns.info("RegistrationFailures" + errno, "map output registrations that failed with "
                        + errno), n));
        long errors = 0;
        for (Map.Entry<WorkCompletionStatus, Long> e : m.completionErrors().entrySet()) {
            errors += e.getValue();
            if (e.getValue() > 0 || all) {
                node.addCounter(Interns.info("CompletionErrors" + e.getKey().name(), "work completions that failed with "
                        + e.getKey().name()), e.getValue());
            }
        }
        node.addCounter(COMPLETION_ERRORS, errors);
        m.servedByApplication().forEach((app, figures) -> served(collector.addRecord(record + APPLICATION_RECORD_SUFFIX)
                .setContext("rdma-shuffle").tag(APPLICATION, app), figures));
    }

    private static void served(MetricsRecordBuilder b, ServedCounts.Snapshot s) {
        b.addCounter(REQUESTS, s.requests()).addCounter(BLOCKS, s.blocks()).addCounter(BYTES, s.bytes())
                .addCounter(REFUSED, s.refused());
        for (Map.Entry<Refusal, Long> e : s.refusals().entrySet()) {
            String kind = e.getKey().metricName();
            b.addCounter(Interns.info("Refused" + Character.toUpperCase(kind.charAt(0)) + kind.substring(1),
                    "fetch requests refused: " + kind), e.getValue());
        }
    }
}
