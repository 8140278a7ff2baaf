package org.rdmashuffle.hadoop;

import javax.crypto.SecretKey;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapred.ShuffleHandler;
import org.apache.hadoop.security.token.SecretManager;
import org.apache.hadoop.yarn.server.api.ApplicationTerminationContext;
import org.apache.hadoop.yarn.server.api.AuxiliaryLocalPathHandler;
import org.rdmashuffle.verbs.EngineRuntime;

/**
 * The NodeManager's shuffle service over RDMA: MapReduce's stock {@link ShuffleHandler} (HTTP, for
 * jobs and nodes without RDMA) plus an engine that serves the same map outputs, registered as memory
 * regions where the map tasks left them, to reducers that read them with RDMA_READ.
 *
 * <p>It takes the place of the stock class as the {@code mapreduce_shuffle} auxiliary service: that is
 * the service MapReduce's application master hands each job's shuffle secret (an auxiliary service
 * under any other name gets an empty buffer), and reducers authenticate with that secret. Everything
 * the stock handler keeps — jobs' secrets and users, recovered after a NodeManager restart from its
 * state store — serves both paths; map outputs need no bookkeeping of their own, being found on disk
 * when first asked for. When an application stops, its outputs' regions are deregistered. The
 * engine's counters are published through metrics2.
 *
 * <p>Built for Java 17 (src/main/java17), so a NodeManager on any JVM Hadoop 3.5 runs on loads it; the
 * engine ({@link MapReduceServing}, made by name) only where the JVM can run it. Where it cannot start,
 * for any reason, the stock HTTP shuffle serves alone and the NodeManager stays up (unless {@code
 * rdma.shuffle.stopOnFailure}).
 *
 * <p>Settings in {@code yarn-site.xml}: {@code rdma.shuffle.service.port} (13570), {@code
 * rdma.shuffle.service.bindAddress}, {@code rdma.shuffle.service.authenticate} and the engine's
 * {@code rdma.shuffle.*}; docs/yarn.md.
 */
public class RdmaShuffleService extends ShuffleHandler {
    static final String METRICS_SOURCE = "RdmaShuffleService";
    static final String SERVICE = "service (mapreduce_shuffle)";
    /** The engine side, built for the engine's Java. */
    static final String ENGINE_SIDE = "org.rdmashuffle.hadoop.MapReduceServing";

    private boolean authenticate;
    private final ServiceEngineSlot<ServiceEngine> slot = new ServiceEngineSlot<>(SERVICE, HadoopKeys.SERVICE_PORT,
            "map outputs are served over HTTP only (MapReduce's stock shuffle)", METRICS_SOURCE, "rdma-shuffle service engine");
    private NodeLocalDirs configuredLocalDirs;
    /** The node's Prometheus exposition if this service owns it (NodePrometheusExporter: the first service to start). */
    private NodePrometheusExporter prometheus;

    @Override
    protected void serviceInit(Configuration conf) throws Exception {
        configuredLocalDirs = new NodeLocalDirs(conf);
        super.serviceInit(conf);
        authenticate = conf.getBoolean(HadoopKeys.SERVICE_AUTHENTICATE, true);
    }

    /**
     * The NodeManager's handler, or the node's configured local dirs where it gave none (a service
     * loaded through its own class path: {@link NodeLocalDirs}). The stock handler's HTTP side asks
     * here too.
     */
    @Override
    public AuxiliaryLocalPathHandler getAuxiliaryLocalPathHandler() {
        return NodeLocalDirs.orConfigured(super.getAuxiliaryLocalPathHandler(), configuredLocalDirs);
    }

    /**
     * Starts the stock HTTP shuffle, then the engine. An engine that cannot start (a bad setting, no
     * usable device, its port taken, a JVM too old) leaves the HTTP shuffle serving and the NodeManager
     * up, says why in one WARN and in the metrics ({@code EngineRunning} 0), unless {@code
     * rdma.shuffle.stopOnFailure}.
     */
    @Override
    protected void serviceStart() throws Exception {
        super.serviceStart();
        slot.start(getConfig(), () -> EngineRuntime.load(RdmaShuffleService.class, ServiceEngine.class, ENGINE_SIDE,
                new Class<?>[] {Configuration.class, AuxiliaryLocalPathHandler.class, boolean.class, ServiceEngine.MapReduceJobs.class},
                getConfig(), getAuxiliaryLocalPathHandler(), authenticate, new Jobs()));
        prometheus = NodePrometheusExporter.claim(getConfig(), SERVICE);
    }

    /** Why the RDMA engine could not start (map outputs are then served over HTTP only), or null while it runs. */
    public String unavailable() {
        return slot.unavailable();
    }

    /** The engine serving map outputs over RDMA, or null where it could not start. */
    ServiceEngine engine() {
        return slot.engine();
    }

    /** The metrics2 source the service registered: the engine's, or the one saying why there is none. */
    org.apache.hadoop.metrics2.MetricsSource metrics() {
        return slot.metrics();
    }

    @Override
    protected void serviceStop() throws Exception {
        try {
            if (prometheus != null) {
                prometheus.close();
            }
            slot.stop();
        } finally {
            super.serviceStop();
        }
    }

    @Override
    public void stopApplication(ApplicationTerminationContext context) {
        ServiceEngine e = slot.engine();
        if (e != null) {
            e.applicationStopped(context.getApplicationId().toString());
        }
        super.stopApplication(context);
    }

    /** The node's Prometheus exposition as this service sees it: serving (it owns it), or why not; null before the start. */
    NodePrometheusExporter prometheus() {
        return prometheus;
    }

    /** Where the engine listens (its control plane). */
    public java.net.InetSocketAddress rdmaAddress() {
        return slot.engine().address();
    }

    /** The jobs the stock handler knows, as the engine asks for them. */
    private final class Jobs implements ServiceEngine.MapReduceJobs {
        @Override
        public String user(String app) {
            try {
                String user = userRsrc.get(MapReduceIds.jobOf(app).toString());
                return user == null ? app : user;
            } catch (IllegalArgumentException notAnApplication) {
                return app;
            }
        }

        @Override
        public String jobUser(String job) {
            return userRsrc.get(job);
        }

        @Override
        public byte[] secret(String app) {
            String job;
            try {
                job = MapReduceIds.jobOf(app).toString();
            } catch (IllegalArgumentException notAnApplication) {
                return null;
            }
            try {
                SecretKey key = secretManager.retrieveTokenSecret(job);
                return key == null ? null : MapReduceIds.engineSecret(key.getEncoded());
            } catch (SecretManager.InvalidToken unknown) {
                return null;
            }
        }
    }
}
