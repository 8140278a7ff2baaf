package org.rdmashuffle.hadoop;

import org.apache.hadoop.conf.Configuration;

/**
 * What a NodeManager service does when its RDMA engine cannot start: a bad setting, no usable device,
 * its port taken, or a JVM too old for the engine ({@code RS09}). Never taking the NodeManager down is
 * the default: the same NodeManager runs MapReduce's stock shuffle and every other auxiliary service.
 * Built for Java 17 (src/main/java17).
 */
final class ServiceStartFailure {
    private static final System.Logger LOG = System.getLogger(ServiceStartFailure.class.getName());

    private ServiceStartFailure() {
    }

    /**
     * {@code failure} (from {@link #cannotStart}): with {@value HadoopKeys#STOP_ON_FAILURE} it is thrown,
     * and the NodeManager stops; else it is one WARN saying what still serves ({@code stillServing}) and
     * why, and the reason is returned for the service's metrics.
     */
    static String handle(Configuration conf, String service, String stillServing, IllegalStateException failure) {
        if (conf.getBoolean(HadoopKeys.STOP_ON_FAILURE, false)) {
            throw failure;
        }
        LOG.log(System.Logger.Level.WARNING, "rdma-shuffle " + service + ": no RDMA on this node, " + stillServing + " ("
                + HadoopKeys.STOP_ON_FAILURE + "=false keeps the NodeManager up): " + failure.getMessage(), failure.getCause());
        return failure.getMessage();
    }

    /**
     * An engine that could not start, said in the NodeManager's terms: the engine names the address and
     * port, this adds the yarn-site.xml key that chose the port (another auxiliary service on it is the
     * usual cause), so the NodeManager's log says what to change.
     */
    static IllegalStateException cannotStart(String service, String portKey, Throwable e) {
        return new IllegalStateException("rdma-shuffle " + service + " cannot start: " + e.getMessage() + " (the port is "
                + portKey + " in yarn-site.xml; reducers must be given the same)", e);
    }

    /** A JVM that cannot run the engine ({@code why}, an {@code RS09 jvm} line). */
    static IllegalStateException jvm(String service, String why) {
        return new IllegalStateException("rdma-shuffle " + service + " cannot start its engine: " + why);
    }
}
