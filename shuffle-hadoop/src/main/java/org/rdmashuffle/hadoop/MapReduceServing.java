package org.rdmashuffle.hadoop;

import java.net.InetSocketAddress;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.server.api.AuxiliaryLocalPathHandler;
import org.rdmashuffle.core.EngineCounters;
import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.ServedApplications;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.Verbs;
import org.rdmashuffle.verbs.VerbsProvider;

/**
 * The engine side of {@link RdmaShuffleService}: an engine in service mode serving the map outputs
 * {@link MapOutputFiles} finds on the node's disks, authenticated with the jobs' shuffle secrets the
 * stock handler keeps, and its metrics2 source ({@link ServiceMetrics}). Made by name by the service,
 * which owns it; built for the engine's Java.
 */
public final class MapReduceServing implements ServiceEngine {
    private static final System.Logger LOG = System.getLogger(MapReduceServing.class.getName());

    private final RdmaShuffleEngine engine;
    private final ServiceMetrics metrics;

    /** Checks the settings and starts the engine; throws, having started nothing, if it cannot. */
    public MapReduceServing(Configuration conf, AuxiliaryLocalPathHandler localDirs, boolean authenticate,
                            ServiceEngine.MapReduceJobs jobs) {
        HadoopSettingsCheck.check(conf, "the NodeManager's mapreduce_shuffle service");
        EngineConfig engineConfig = HadoopSettings.serviceEngineConfig(conf, HadoopSettings.servicePort(conf));
        VerbsProvider provider = Verbs.choose(engineConfig.provider(), engineConfig.providerSettings()).orElseThrow();
        RdmaShuffleEngine e = RdmaShuffleEngine.startService(engineConfig, authenticate ? new ServedApplications() {
            @Override
            public byte[] secret(String app) {
                return jobs.secret(app);
            }

            @Override
            public String user(String app) {
                return jobs.user(app);
            }
        } : null, provider);
        try {
            MapOutputFiles outputs = new MapOutputFiles(localDirs, jobs::jobUser, UserGroupInformation.isSecurityEnabled());
            e.resolver(outputs);
            metrics = ServiceMetrics.register(RdmaShuffleService.METRICS_SOURCE, "rdma-shuffle service engine", e,
                    outputs::resolved);
        } catch (RuntimeException ex) {
            e.close();
            throw ex;
        }
        engine = e;
        LOG.log(System.Logger.Level.INFO, "rdma-shuffle service: map outputs carried by " + e.carrier() + " at " + e.address()
                + (authenticate ? "" : " WITHOUT authentication (" + HadoopKeys.SERVICE_AUTHENTICATE + "=false)"));
    }

    @Override
    public InetSocketAddress address() {
        return engine.address();
    }

    @Override
    public int applicationStopped(String app) {
        int outputs = engine.unregisterApplication(app);
        LOG.log(System.Logger.Level.DEBUG, () -> "rdma-shuffle service: " + app + " stopped, " + outputs
                + " map outputs forgotten");
        return outputs;
    }

    /** The engine's counters now. */
    EngineCounters counters() {
        return engine.counters();
    }

    /** Map outputs the engine knows now, across applications (found on disk; registered with the device or not). */
    int mapOutputs() {
        return engine.mapOutputs();
    }

    @Override
    public ServiceMetrics metrics() {
        return metrics;
    }

    /** Unregisters the metrics source, then closes the engine (both, even if the first throws). */
    @Override
    public void close() {
        try {
            metrics.unregister();
        } finally {
            engine.close();
        }
    }
}
