package org.rdmashuffle.core.service;

import java.net.InetSocketAddress;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

import org.rdmashuffle.core.EngineCounters;
import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.server.files.Confinement;
import org.rdmashuffle.verbs.VerbsProvider;

/**
 * The RDMA half of a node's shuffle service for Spark: one engine serving the map outputs every Spark
 * application left on this node, so they outlive the executors that wrote them (dynamic allocation,
 * preemption, an executor that exited). Spark's own external shuffle service runs beside it: executors
 * register with that one ({@code spark.shuffle.service.enabled=true}), which is what makes Spark keep
 * their outputs when they exit; reducers with {@code spark.shuffle.rdma.service.enabled=true} fetch
 * from this one.
 *
 * <p>An application is served once it has been {@linkplain #applicationStarted started} with its secret
 * (Spark's {@code spark.authenticate} secret, which the NodeManager hands the service): reducers must
 * prove they hold it before any block descriptor (and so any rkey) is sent. Outputs are found on disk
 * when first asked for ({@link SparkOutputFiles}) and their regions dropped when the application stops.
 * Hadoop-free: the YARN auxiliary service wraps it, tests run it in-process.
 */
public final class SparkShuffleServer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(SparkShuffleServer.class.getName());

    private final Map<String, byte[]> secrets = new ConcurrentHashMap<>();
    private final Map<String, String> users = new ConcurrentHashMap<>();
    private final SparkOutputFiles outputs;
    private final RdmaShuffleEngine engine;

    /**
     * @param applications the directories on this node holding an application's executors'
     *        {@code blockmgr-*} dirs, and the owner their files must have (see {@link SparkOutputFiles})
     */
    public SparkShuffleServer(EngineConfig config, Function<String, Confinement> applications, VerbsProvider provider) {
        this.outputs = new SparkOutputFiles(applications);
        this.engine = RdmaShuffleEngine.startService(config, new org.rdmashuffle.core.ServedApplications() {
            @Override
            public byte[] secret(String app) {
                return secrets.get(app);
            }

            @Override
            public String user(String app) {
                return users.getOrDefault(app, app);
            }
        }, provider);
        engine.resolver(outputs);
        LOG.log(System.Logger.Level.INFO, "rdma-shuffle Spark service: map outputs carried by " + engine.carrier() + " at "
                + engine.address());
    }

    /**
     * Serves {@code appId} from now on to reducers that hold {@code secret}. Spark hands the service
     * the UTF-8 bytes of its {@code spark.authenticate} secret; an empty one (authentication off)
     * is refused, because then nobody could be told apart from the application.
     */
    public void applicationStarted(String appId, byte[] secret) {
        applicationStarted(appId, appId, secret);
    }

    /**
     * As {@link #applicationStarted(String, byte[])}, run by {@code user}: the application's resources
     * here count against that user's share of the node as well as its own.
     */
    public void applicationStarted(String appId, String user, byte[] secret) {
        if (secret == null || secret.length == 0) {
            throw new IllegalArgumentException("Spark application " + appId + " has no shuffle secret (spark.authenticate "
                    + "is false): the RDMA shuffle service serves only applications that authenticate");
        }
        users.put(appId, user == null ? appId : user);
        secrets.put(appId, secret.clone());
    }

    /**
     * Stops serving {@code appId}: its reducers are refused from now on and its connections closed;
     * its outputs' regions are deregistered off the caller's thread. Returns how many outputs it had here.
     */
    public int applicationStopped(String appId) {
        secrets.remove(appId);
        int outputs = engine.unregisterApplication(appId);
        users.remove(appId);
        return outputs;
    }

    /** Whether {@code appId} is being served. */
    public boolean serves(String appId) {
        return secrets.containsKey(appId);
    }

    /** Where reducers reach the engine (its control plane). */
    public InetSocketAddress address() {
        return engine.address();
    }

    public String providerName() {
        return engine.providerName();
    }

    public String deviceName() {
        return engine.deviceName();
    }

    public EngineCounters counters() {
        return engine.counters();
    }

    /** Map outputs found on disk and handed to the engine so far. */
    public long outputsResolved() {
        return outputs.resolved();
    }

    /** The engine, for metrics. */
    public RdmaShuffleEngine engine() {
        return engine;
    }

    @Override
    public void close() {
        engine.close();
    }
}
