package org.rdmashuffle.hadoop;

import java.net.InetSocketAddress;

/**
 * A NodeManager service's RDMA engine, as the service sees it. The services are built for Java 17
 * (src/main/java17) so a NodeManager on any JVM can load them; this is made by name
 * ({@code org.rdmashuffle.verbs.EngineRuntime#load}) only on a JVM that can run the engine, and is
 * owned by the service that made it: its {@link #close()} ends the engine and its metrics source.
 */
interface ServiceEngine extends AutoCloseable {
    /** Where the engine listens (its control plane). */
    InetSocketAddress address();

    /** Its figures, as a metrics2 source (registered as the engine started, unregistered by {@link #close()}). */
    org.apache.hadoop.metrics2.MetricsSource metrics();

    /** Forgets {@code app}'s map outputs (their regions deregistered); how many there were. */
    int applicationStopped(String app);

    @Override
    void close();

    /** Spark's service's engine: applications are announced to it with their users and secrets. */
    interface ForSpark extends ServiceEngine {
        /** Serves {@code app}, run by {@code user}, to reducers that prove {@code secret}. */
        void applicationStarted(String app, String user, byte[] secret);
    }

    /** What MapReduce's service's engine asks its service of the jobs the stock handler knows. */
    interface MapReduceJobs {
        /** The engine's secret of the job {@code app} runs, or null if this node does not know it. */
        byte[] secret(String app);

        /** The user who runs {@code app}'s job; {@code app} itself if unknown. */
        String user(String app);

        /** The user of {@code job} as the stock handler recorded it, or null. */
        String jobUser(String job);
    }
}
