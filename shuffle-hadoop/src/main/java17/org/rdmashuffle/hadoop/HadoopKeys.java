package org.rdmashuffle.hadoop;

/**
 * The {@code rdma.shuffle.*} keys the classes YARN and MapReduce load by name read on any JVM, before
 * they know whether it can run the engine. Built for Java 17 (src/main/java17); every other key, and
 * the checks of all of them, are {@code HadoopSettings}'s and {@code HadoopSettingsCheck}'s.
 */
final class HadoopKeys {
    static final String PREFIX = "rdma.shuffle.";
    /** The port of every NodeManager's RDMA shuffle service; reducers reach each node's service there. */
    static final String SERVICE_PORT = PREFIX + "service.port";
    /** The port of every node's RDMA service for Spark; Spark's {@code spark.shuffle.rdma.service.port} must match. */
    static final String SPARK_SERVICE_PORT = PREFIX + "spark.service.port";
    /** false: the service serves any reducer that names an application (trusted networks only). */
    static final String SERVICE_AUTHENTICATE = PREFIX + "service.authenticate";
    /** true: a reducer that cannot use RDMA (no device, no service on a node) fetches over HTTP instead of failing. */
    static final String MAPREDUCE_FALLBACK = PREFIX + "mapreduce.fallback";
    /**
     * true: a NodeManager service whose RDMA engine cannot start fails its start, which stops the
     * NodeManager (as Spark's {@code spark.yarn.shuffle.stopOnFailure}); false (the default): it serves
     * without RDMA and says why.
     */
    static final String STOP_ON_FAILURE = PREFIX + "stopOnFailure";
    /**
     * The port of the node's Prometheus exposition ({@code NodePrometheusExporter}), shared by both services;
     * unset: none. 0: any free port (logged).
     */
    static final String PROMETHEUS_PORT = PREFIX + "prometheus.port";
    /** YARN's name for this node (yarn-site.xml); its default is the host's name. */
    static final String NODE_MANAGER_HOSTNAME = "yarn.nodemanager.hostname";
    /** Where that exposition listens (default the wildcard: every address of the node). */
    static final String PROMETHEUS_BIND_ADDRESS = PREFIX + "prometheus.bindAddress";

    private HadoopKeys() {
    }
}
