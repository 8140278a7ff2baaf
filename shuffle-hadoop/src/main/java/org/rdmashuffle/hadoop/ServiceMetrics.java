package org.rdmashuffle.hadoop;

import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsInfo;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.lib.Interns;
import org.rdmashuffle.core.EngineCounters;
import org.rdmashuffle.core.RdmaShuffleEngine;

/**
 * A service engine's counters as a metrics2 source (context {@code rdma-shuffle}; record {@code
 * RdmaShuffleService} for MapReduce's, {@code RdmaSparkShuffleService} for Spark's).
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

    @Override
    public void getMetrics(MetricsCollector collector, boolean all) {
        EngineCounters c = engine.counters();
        collector.addRecord(record).setContext("rdma-shuffle")
                .addGauge(SERVING_CONNECTIONS, c.servingConnections())
                .addGauge(REGISTERED_BYTES, c.registeredMapOutputBytes())
                .addGauge(RECEIVES_POSTED, c.receivesPosted())
                .addGauge(SENDS_IN_FLIGHT, c.sendsInFlight())
                .addCounter(LOW_WATER_EVENTS, c.receiveLowWaterEvents())
                .addCounter(RESOLVED, resolved.getAsLong())
                .addCounter(COMPLETIONS, c.completions());
    }
}
