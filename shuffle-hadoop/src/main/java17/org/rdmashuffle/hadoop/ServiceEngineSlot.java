package org.rdmashuffle.hadoop;

import java.util.Optional;
import java.util.function.Supplier;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.metrics2.MetricsSource;
import org.rdmashuffle.verbs.EngineRuntime;

/**
 * Where a NodeManager service keeps its RDMA engine: the engine once it started, or why it could not
 * (a bad setting, no usable device, its port taken, a JVM too old for the engine: {@code RS09}), with
 * the metrics2 source saying so. Never taking the NodeManager down is the default: the same
 * NodeManager runs MapReduce's stock shuffle and every other auxiliary service, so a failed start is one
 * WARN, unless {@value HadoopKeys#STOP_ON_FAILURE}. Owned by its service, which calls {@link #start}
 * in its {@code serviceStart} and {@link #stop} in its {@code serviceStop} (NodeManager threads).
 * Built for Java 17 (src/main/java17).
 */
final class ServiceEngineSlot<E extends ServiceEngine> {
    private static final System.Logger LOG = System.getLogger(ServiceEngineSlot.class.getName());

    private final String service;
    private final String portKey;
    private final String stillServing;
    private final String metricsRecord;
    private final String metricsDescription;
    private volatile E engine;
    private volatile String unavailable;
    private UnavailableEngineMetrics unavailableMetrics;

    /**
     * @param service the service, as its log lines name it ("service (mapreduce_shuffle)")
     * @param portKey the yarn-site.xml key of the engine's port, for the reason a port taken gives
     * @param stillServing what serves when the engine does not ("map outputs are served over HTTP only")
     * @param metricsRecord the metrics2 source and record name, the same whether the engine runs or not
     */
    ServiceEngineSlot(String service, String portKey, String stillServing, String metricsRecord, String metricsDescription) {
        this.service = service;
        this.portKey = portKey;
        this.stillServing = stillServing;
        this.metricsRecord = metricsRecord;
        this.metricsDescription = metricsDescription;
    }

    /**
     * Makes the engine with {@code make} (only where this JVM can run it), or records why not: one WARN
     * and {@code EngineRunning} 0 in the metrics. With {@code stopOnFailure} the failure is thrown instead.
     */
    void start(Configuration conf, Supplier<E> make) {
        IllegalStateException failure;
        Optional<String> jvm = EngineRuntime.unavailable();
        if (jvm.isPresent()) {
            failure = new IllegalStateException("rdma-shuffle " + service + " cannot start its engine: " + jvm.get());
        } else {
            try {
                engine = make.get();
                return;
            } catch (RuntimeException | LinkageError e) {
                // The engine names the address and port; the key that chose the port says what to change.
                failure = new IllegalStateException("rdma-shuffle " + service + " cannot start: " + e.getMessage()
                        + " (the port is " + portKey + " in yarn-site.xml; reducers must be given the same)", e);
            }
        }
        if (conf.getBoolean(HadoopKeys.STOP_ON_FAILURE, false)) {
            throw failure;
        }
        LOG.log(System.Logger.Level.WARNING, "rdma-shuffle " + service + ": no RDMA on this node, " + stillServing + " ("
                + HadoopKeys.STOP_ON_FAILURE + "=false keeps the NodeManager up): " + failure.getMessage(), failure.getCause());
        unavailable = failure.getMessage();
        unavailableMetrics = UnavailableEngineMetrics.register(metricsRecord, metricsDescription, unavailable);
    }

    /** The running engine, or null where it could not start. */
    E engine() {
        return engine;
    }

    /** Why the engine could not start, or null while it runs. */
    String unavailable() {
        return unavailable;
    }

    /** The metrics2 source registered: the engine's, or the one saying why there is none. */
    MetricsSource metrics() {
        E e = engine;
        return e != null ? e.metrics() : unavailableMetrics;
    }

    /** Unregisters the metrics saying why, or closes the engine (which unregisters its own); idempotent. */
    void stop() {
        if (unavailableMetrics != null) {
            unavailableMetrics.unregister();
            unavailableMetrics = null;
        }
        E e = engine;
        engine = null;
        if (e != null) {
            e.close();
        }
    }
}
