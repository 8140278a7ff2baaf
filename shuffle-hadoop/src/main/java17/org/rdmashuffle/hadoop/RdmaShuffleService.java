package org.rdmashuffle.hadoop;

import javax.crypto.SecretKey;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapred.ShuffleHandler;
import org.apache.hadoop.security.token.SecretManager;
import org.apache.hadoop.yarn.server.api.ApplicationTerminationContext;
import org.apache.hadoop.yarn.server.api.AuxiliaryLocalPathHandler;
import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.Verbs;
import org.rdmashuffle.verbs.VerbsProvider;

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
 * when first asked for ({@link MapOutputFiles}). When an application stops, its outputs' regions are
 * deregistered. The engine's counters are published through metrics2 ({@link ServiceMetrics}).
 *
 * <p>Settings in {@code yarn-site.xml}: {@code rdma.shuffle.service.port} (13570), {@code
 * rdma.shuffle.service.bindAddress}, {@code rdma.shuffle.service.authenticate} and the engine's
 * {@code rdma.shuffle.*}; docs/yarn.md.
 */
public class RdmaShuffleService extends ShuffleHandler {
    private static final System.Logger LOG = System.getLogger(RdmaShuffleService.class.getName());
    static final String METRICS_SOURCE = "RdmaShuffleService";

    private boolean authenticate;
    /** Why the engine could not start (the service then serves over HTTP only); null while it runs. */
    private volatile String unavailable;
    private RdmaShuffleEngine engine;
    private ServiceMetrics metrics;
    private NodeLocalDirs configuredLocalDirs;

    @Override
    protected void serviceInit(Configuration conf) throws Exception {
        configuredLocalDirs = new NodeLocalDirs(conf);
        super.serviceInit(conf);
        authenticate = conf.getBoolean(HadoopSettings.SERVICE_AUTHENTICATE, true);
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
     * usable device, its port taken) leaves the HTTP shuffle serving and the NodeManager up, says why
     * in one WARN and in the metrics ({@code EngineRunning} 0), unless {@code rdma.shuffle.stopOnFailure}.
     */
    @Override
    protected void serviceStart() throws Exception {
        super.serviceStart();
        try {
            startEngine();
        } catch (RuntimeException | LinkageError e) {
            unavailable = HadoopSettings.engineUnavailable(getConfig(), "service (mapreduce_shuffle)",
                    "map outputs are served over HTTP only (MapReduce's stock shuffle)",
                    HadoopSettings.serviceCannotStart("service (mapreduce_shuffle)", HadoopSettings.SERVICE_PORT, e));
            metrics = ServiceMetrics.registerUnavailable(METRICS_SOURCE, "rdma-shuffle service engine", unavailable);
        }
    }

    private void startEngine() {
        Configuration conf = getConfig();
        HadoopSettingsCheck.check(conf, "the NodeManager's mapreduce_shuffle service");
        EngineConfig engineConfig = HadoopSettings.serviceEngineConfig(conf, HadoopSettings.servicePort(conf));
        VerbsProvider provider = Verbs.choose(engineConfig.provider(), engineConfig.providerSettings()).orElseThrow();
        RdmaShuffleEngine e = RdmaShuffleEngine.startService(engineConfig, authenticate ? new org.rdmashuffle.core.ServedApplications() {
            @Override
            public byte[] secret(String app) {
                return secretOf(app);
            }

            @Override
            public String user(String app) {
                return userOf(app);
            }
        } : null, provider);
        try {
            MapOutputFiles outputs = new MapOutputFiles(getAuxiliaryLocalPathHandler(), job -> userRsrc.get(job),
                    org.apache.hadoop.security.UserGroupInformation.isSecurityEnabled());
            e.resolver(outputs);
            metrics = ServiceMetrics.register(METRICS_SOURCE, "rdma-shuffle service engine", e, outputs::resolved);
        } catch (RuntimeException ex) {
            e.close();
            throw ex;
        }
        engine = e;
        LOG.log(System.Logger.Level.INFO, "rdma-shuffle service: map outputs served over " + e.providerName()
                + " device " + e.deviceName() + " at " + e.address()
                + (authenticate ? "" : " WITHOUT authentication (rdma.shuffle.service.authenticate=false)"));
    }

    /** Why the RDMA engine could not start (map outputs are then served over HTTP only), or null while it runs. */
    public String unavailable() {
        return unavailable;
    }

    @Override
    protected void serviceStop() throws Exception {
        try {
            if (metrics != null) {
                metrics.unregister();
                metrics = null;
            }
            if (engine != null) {
                engine.close();
                engine = null;
            }
        } finally {
            super.serviceStop();
        }
    }

    @Override
    public void stopApplication(ApplicationTerminationContext context) {
        String app = context.getApplicationId().toString();
        if (engine != null) {
            int outputs = engine.unregisterApplication(app);
            LOG.log(System.Logger.Level.DEBUG, () -> "rdma-shuffle service: " + app + " stopped, " + outputs
                    + " map outputs forgotten");
        }
        super.stopApplication(context);
    }

    /** The engine's counters now. */
    public org.rdmashuffle.core.EngineCounters engineCounters() {
        return engine.counters();
    }

    ServiceMetrics metrics() {
        return metrics;
    }

    /** Where the engine listens (its control plane). */
    public java.net.InetSocketAddress rdmaAddress() {
        return engine.address();
    }

    /** The user who runs an application's job, as the stock handler recorded it; the application itself if unknown. */
    private String userOf(String app) {
        try {
            String user = userRsrc.get(MapReduceIds.jobOf(app).toString());
            return user == null ? app : user;
        } catch (IllegalArgumentException notAnApplication) {
            return app;
        }
    }

    /** The shuffle secret of the job an application runs, or null if this node does not know the job. */
    private byte[] secretOf(String app) {
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
