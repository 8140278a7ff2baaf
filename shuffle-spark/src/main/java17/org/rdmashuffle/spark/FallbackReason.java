package org.rdmashuffle.spark;

/**
 * Why a block went over Spark's built-in transport instead of RDMA, as operators count them (metric
 * {@code fallback.blocks.<name>}). Built for Java 17 (src/main/java17): the driver's metrics name
 * every reason on any JVM.
 */
public enum FallbackReason {
    /** This executor's engine could not start (the executor's report says why). */
    ENGINE_UNAVAILABLE("engineUnavailable"),
    /** The executor holding the block runs no engine (it fell back itself). */
    PEER_WITHOUT_ENGINE("peerWithoutEngine"),
    /** The serving engine will not serve the block by RDMA (cannot register it, out of registered memory, ...). */
    REFUSED("refused"),
    /** Nobody answered at the serving engine's control address; Spark's shuffle service kept the files. */
    UNREACHABLE("unreachable"),
    /** The serving engine refused the handshake (secret, unknown application). */
    NOT_AUTHENTICATED("notAuthenticated");

    private final String metricName;

    FallbackReason(String metricName) {
        this.metricName = metricName;
    }

    public String metricName() {
        return metricName;
    }
}
