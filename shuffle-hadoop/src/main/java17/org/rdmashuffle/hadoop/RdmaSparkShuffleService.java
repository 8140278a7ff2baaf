package org.rdmashuffle.hadoop;

import java.nio.ByteBuffer;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.yarn.server.api.ApplicationInitializationContext;
import org.apache.hadoop.yarn.server.api.ApplicationTerminationContext;
import org.apache.hadoop.yarn.server.api.AuxiliaryLocalPathHandler;
import org.apache.hadoop.yarn.server.api.AuxiliaryService;
import org.apache.hadoop.yarn.server.api.ContainerInitializationContext;
import org.apache.hadoop.yarn.server.api.ContainerTerminationContext;
import org.rdmashuffle.verbs.EngineRuntime;

/**
 * The NodeManager's shuffle service for Spark over RDMA: Spark's own YARN shuffle service
 * ({@code org.apache.spark.network.yarn.YarnShuffleService}, from the Spark distribution's
 * {@code yarn/spark-<version>-yarn-shuffle.jar}), unchanged, plus a {@link SparkShuffleServer} that
 * serves the same applications' map outputs by RDMA.
 *
 * <p>It takes the place of Spark's class as the {@code spark_shuffle} auxiliary service (the name in
 * {@code spark.shuffle.service.name}): Spark hands each application's secret to that one service
 * only, and both halves need it — Spark's to authenticate executors registering and TCP fetches,
 * ours to authenticate RDMA reducers. Spark's half is what lets Spark keep an exited executor's
 * outputs and run dynamic allocation; ours finds those outputs on the node's disks
 * ({@code usercache/<user>/appcache/<application>/blockmgr-*}). Applications' users and secrets are
 * kept under the NodeManager's recovery path (files readable by the NodeManager alone) so a
 * restarted NodeManager serves running applications again.
 *
 * <p>Built for Java 17 (src/main/java17), so a NodeManager on any JVM Hadoop 3.5 runs on loads it; the
 * engine ({@link SparkServing}, made by name) only where the JVM can run it. Where it cannot start, for
 * any reason, Spark's half serves alone and the NodeManager stays up (unless {@code
 * rdma.shuffle.stopOnFailure}).
 *
 * <p>Settings in {@code yarn-site.xml}: {@code rdma.shuffle.spark.service.port} (13571), {@code
 * rdma.shuffle.service.bindAddress} and the engine's {@code rdma.shuffle.*}; Spark's own ({@code
 * spark.shuffle.service.port}, ...) as for its service. docs/yarn.md.
 */
public class RdmaSparkShuffleService extends AuxiliaryService {
    private static final System.Logger LOG = System.getLogger(RdmaSparkShuffleService.class.getName());
    static final String NAME = "spark_shuffle";
    static final String SPARK_SERVICE_CLASS = "org.apache.spark.network.yarn.YarnShuffleService";
    static final String METRICS_SOURCE = "RdmaSparkShuffleService";
    static final String SERVICE = "Spark service (spark_shuffle)";
    /** The engine side, built for the engine's Java. */
    static final String ENGINE_SIDE = "org.rdmashuffle.hadoop.SparkServing";

    private final AuxiliaryService spark;
    private final ServiceEngineSlot<ServiceEngine.ForSpark> slot = new ServiceEngineSlot<>(SERVICE,
            HadoopKeys.SPARK_SERVICE_PORT, "Spark's own service serves its applications over TCP", METRICS_SOURCE,
            "rdma-shuffle Spark service engine");
    private NodeLocalDirs configuredLocalDirs;
    /** The node's Prometheus exposition if this service owns it (NodePrometheusExporter: the first service to start). */
    private NodePrometheusExporter prometheus;

    /** As the NodeManager creates it: Spark's service must be on this service's classpath. */
    public RdmaSparkShuffleService() {
        this(loadSparkService());
    }

    /** @param spark Spark's shuffle service (or a stand-in, in tests) */
    RdmaSparkShuffleService(AuxiliaryService spark) {
        super(NAME);
        this.spark = spark;
    }

    private static AuxiliaryService loadSparkService() {
        try {
            return (AuxiliaryService) Class.forName(SPARK_SERVICE_CLASS, true, RdmaSparkShuffleService.class.getClassLoader())
                    .getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException | LinkageError e) {
            throw new IllegalStateException("rdma-shuffle: Spark's YARN shuffle service (" + SPARK_SERVICE_CLASS
                    + ", in the Spark distribution's yarn/spark-<version>-yarn-shuffle.jar) cannot be loaded beside "
                    + RdmaSparkShuffleService.class.getName() + ": put that jar on the same classpath (docs/yarn.md); "
                    + e, e);
        }
    }

    @Override
    public void setRecoveryPath(Path recoveryPath) {
        super.setRecoveryPath(recoveryPath);
        spark.setRecoveryPath(recoveryPath);
    }

    @Override
    public void setAuxiliaryLocalPathHandler(AuxiliaryLocalPathHandler handler) {
        super.setAuxiliaryLocalPathHandler(handler);
        spark.setAuxiliaryLocalPathHandler(handler);
    }

    /** The NodeManager's handler, or the node's configured local dirs where it gave none ({@link NodeLocalDirs}). */
    @Override
    public AuxiliaryLocalPathHandler getAuxiliaryLocalPathHandler() {
        return NodeLocalDirs.orConfigured(super.getAuxiliaryLocalPathHandler(), configuredLocalDirs);
    }

    @Override
    protected void serviceInit(Configuration conf) throws Exception {
        configuredLocalDirs = new NodeLocalDirs(conf);
        spark.init(conf);
        super.serviceInit(conf);
    }

    /**
     * Starts Spark's half, then the RDMA engine. An engine that cannot start (a bad setting, no usable
     * device, its port taken, a JVM too old) leaves Spark's half serving over TCP and the NodeManager up,
     * says why in one WARN and in the metrics ({@code EngineRunning} 0), unless {@code
     * rdma.shuffle.stopOnFailure}.
     */
    @Override
    protected void serviceStart() throws Exception {
        spark.start();
        slot.start(getConfig(), () -> EngineRuntime.load(RdmaSparkShuffleService.class, ServiceEngine.ForSpark.class,
                ENGINE_SIDE, new Class<?>[] {Configuration.class, AuxiliaryLocalPathHandler.class, Path.class},
                getConfig(), getAuxiliaryLocalPathHandler(), getRecoveryPath()));
        prometheus = NodePrometheusExporter.claim(getConfig(), SERVICE);
        super.serviceStart();
    }

    /** Why the RDMA engine could not start (Spark's half then serves alone), or null while it runs. */
    public String unavailable() {
        return slot.unavailable();
    }

    @Override
    protected void serviceStop() throws Exception {
        try {
            if (prometheus != null) {
                prometheus.close();
            }
            slot.stop();
        } finally {
            spark.stop();
            super.serviceStop();
        }
    }

    @Override
    public void initializeApplication(ApplicationInitializationContext context) {
        String app = context.getApplicationId().toString();
        ByteBuffer data = context.getApplicationDataForService();
        byte[] secret = new byte[data == null ? 0 : data.remaining()];
        if (data != null) {
            data.duplicate().get(secret); // read before Spark's half sees the buffer
        }
        spark.initializeApplication(context);
        ServiceEngine.ForSpark engine = slot.engine();
        if (engine == null) {
            return; // no engine here (unavailable says why): Spark's half serves it
        }
        if (secret.length == 0) {
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle Spark service: " + app + " gave no secret (spark.authenticate="
                    + "false), so its shuffle is not served over RDMA; Spark's service still serves it over TCP");
            return;
        }
        engine.applicationStarted(app, context.getUser(), secret);
    }

    @Override
    public void stopApplication(ApplicationTerminationContext context) {
        try {
            ServiceEngine.ForSpark engine = slot.engine();
            if (engine != null) {
                engine.applicationStopped(context.getApplicationId().toString());
            }
        } finally {
            spark.stopApplication(context);
        }
    }

    @Override
    public void initializeContainer(ContainerInitializationContext context) {
        spark.initializeContainer(context);
    }

    @Override
    public void stopContainer(ContainerTerminationContext context) {
        spark.stopContainer(context);
    }

    @Override
    public ByteBuffer getMetaData() {
        return spark.getMetaData();
    }

    /** The metrics2 source the service registered: the engine's, or the one saying why there is none. */
    org.apache.hadoop.metrics2.MetricsSource metrics() {
        return slot.metrics();
    }

    /** The node's Prometheus exposition as this service sees it: serving (it owns it), or why not; null before the start. */
    NodePrometheusExporter prometheus() {
        return prometheus;
    }

    /** Where the RDMA engine listens (its control plane). */
    public java.net.InetSocketAddress rdmaAddress() {
        return slot.engine().address();
    }

    /** The engine serving Spark's outputs over RDMA, or null where it could not start. */
    ServiceEngine.ForSpark engine() {
        return slot.engine();
    }
}
