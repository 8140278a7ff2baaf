package org.rdmashuffle.hadoop;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.yarn.server.api.ApplicationInitializationContext;
import org.apache.hadoop.yarn.server.api.ApplicationTerminationContext;
import org.apache.hadoop.yarn.server.api.AuxiliaryLocalPathHandler;
import org.apache.hadoop.yarn.server.api.AuxiliaryService;
import org.apache.hadoop.yarn.server.api.ContainerInitializationContext;
import org.apache.hadoop.yarn.server.api.ContainerTerminationContext;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.server.files.Confinement;
import org.rdmashuffle.core.service.SparkShuffleServer;
import org.rdmashuffle.verbs.Verbs;

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
 * <p>Settings in {@code yarn-site.xml}: {@code rdma.shuffle.spark.service.port} (13571), {@code
 * rdma.shuffle.service.bindAddress} and the engine's {@code rdma.shuffle.*}; Spark's own ({@code
 * spark.shuffle.service.port}, ...) as for its service. docs/yarn.md.
 */
public class RdmaSparkShuffleService extends AuxiliaryService {
    private static final System.Logger LOG = System.getLogger(RdmaSparkShuffleService.class.getName());
    static final String NAME = "spark_shuffle";
    static final String SPARK_SERVICE_CLASS = "org.apache.spark.network.yarn.YarnShuffleService";
    static final String METRICS_SOURCE = "RdmaSparkShuffleService";
    /** The port of every node's RDMA service for Spark; Spark's {@code spark.shuffle.rdma.service.port} must match. */
    static final String SPARK_SERVICE_PORT = HadoopSettings.PREFIX + "spark.service.port";
    static final int DEFAULT_SPARK_SERVICE_PORT = 13571;
    /** Under the recovery path: one file per served application (user, secret). */
    static final String RECOVERY_DIR = "rdma-spark-applications";

    private final AuxiliaryService spark;
    private final Map<String, String> users = new ConcurrentHashMap<>();
    private volatile SparkShuffleServer server;
    /** Why the RDMA engine could not start (Spark's half then serves alone); null while it runs. */
    private volatile String unavailable;
    private ServiceMetrics metrics;
    private NodeLocalDirs configuredLocalDirs;

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
     * device, its port taken) leaves Spark's half serving over TCP and the NodeManager up, says why in
     * one WARN and in the metrics ({@code EngineRunning} 0), unless {@code rdma.shuffle.stopOnFailure}.
     */
    @Override
    protected void serviceStart() throws Exception {
        spark.start();
        try {
            startEngine();
        } catch (RuntimeException | LinkageError e) {
            unavailable = HadoopSettings.engineUnavailable(getConfig(), "Spark service (spark_shuffle)",
                    "Spark's own service serves its applications over TCP",
                    HadoopSettings.serviceCannotStart("Spark service (spark_shuffle)", SPARK_SERVICE_PORT, e));
            metrics = ServiceMetrics.registerUnavailable(METRICS_SOURCE, "rdma-shuffle Spark service engine", unavailable);
        }
        super.serviceStart();
    }

    private void startEngine() {
        Configuration conf = getConfig();
        HadoopSettingsCheck.check(conf, "the NodeManager's spark_shuffle service");
        EngineConfig engineConfig = HadoopSettings.serviceEngineConfig(conf, conf.getInt(SPARK_SERVICE_PORT,
                DEFAULT_SPARK_SERVICE_PORT));
        SparkShuffleServer s = new SparkShuffleServer(engineConfig, this::confinement,
                Verbs.choose(engineConfig.provider(), engineConfig.providerSettings()).orElseThrow());
        try {
            server = s;
            recover();
            metrics = ServiceMetrics.register(METRICS_SOURCE, "rdma-shuffle Spark service engine", s.engine(),
                    s::outputsResolved);
        } catch (IOException | RuntimeException e) {
            server = null;
            s.close();
            throw e instanceof IOException io ? new java.io.UncheckedIOException("cannot read the applications recorded "
                    + "before a restart: " + io.getMessage(), io) : (RuntimeException) e;
        }
    }

    /** Why the RDMA engine could not start (Spark's half then serves alone), or null while it runs. */
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
            if (server != null) {
                server.close();
                server = null;
            }
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
        SparkShuffleServer server = this.server;
        if (server == null) {
            return; // no engine here (unavailable says why): Spark's half serves it
        }
        if (secret.length == 0) {
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle Spark service: " + app + " gave no secret (spark.authenticate="
                    + "false), so its shuffle is not served over RDMA; Spark's service still serves it over TCP");
            return;
        }
        server.applicationStarted(app, context.getUser(), secret);
        users.put(app, context.getUser());
        remember(app, context.getUser(), secret);
    }

    @Override
    public void stopApplication(ApplicationTerminationContext context) {
        try {
            String app = context.getApplicationId().toString();
            users.remove(app);
            forget(app);
            if (server != null) {
                int outputs = server.applicationStopped(app);
                LOG.log(System.Logger.Level.DEBUG, () -> "rdma-shuffle Spark service: " + app + " stopped, " + outputs
                        + " map outputs forgotten");
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

    /** Where the RDMA engine listens (its control plane). */
    public java.net.InetSocketAddress rdmaAddress() {
        return server.address();
    }

    SparkShuffleServer server() {
        return server;
    }

    /**
     * Each NodeManager local dir's {@code usercache/<user>/appcache/<app>}, where YARN puts executors'
     * local dirs (none of its components below the local dir may be a link), and the owner files there
     * must have: the application's user when Hadoop security is on (containers then run as that user).
     */
    private Confinement confinement(String app) {
        String user = users.get(app);
        List<java.nio.file.Path> dirs = new ArrayList<>();
        if (user == null || user.contains("/") || app.contains("/")) {
            return new Confinement(dirs, null);
        }
        String appDir = "usercache/" + user + "/appcache/" + app;
        try {
            for (Path p : getAuxiliaryLocalPathHandler().getAllLocalPathsForRead(appDir)) {
                java.nio.file.Path full = java.nio.file.Path.of(p.toUri().getPath());
                try {
                    dirs.add(Confinement.applicationDirAt(full, appDir));
                } catch (IOException refused) {
                    LOG.log(System.Logger.Level.WARNING, "rdma-shuffle Spark service: not serving " + app + " from "
                            + full + ": " + refused.getMessage());
                }
            }
        } catch (IOException noneReadable) {
            LOG.log(System.Logger.Level.DEBUG, () -> "no local dir of " + app + ": " + noneReadable.getMessage());
        }
        return new Confinement(dirs, UserGroupInformation.isSecurityEnabled() ? user : null);
    }

    private java.nio.file.Path recoveryDir() {
        Path p = getRecoveryPath();
        return p == null ? null : java.nio.file.Path.of(p.toUri().getPath(), RECOVERY_DIR);
    }

    /** Writes the application's user and secret where only the NodeManager's user can read them. */
    private void remember(String app, String user, byte[] secret) {
        java.nio.file.Path dir = recoveryDir();
        if (dir == null) {
            return;
        }
        try {
            Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            java.nio.file.Path file = dir.resolve(app);
            java.nio.file.Path tmp = dir.resolve(app + ".tmp");
            Files.deleteIfExists(tmp);
            Files.createFile(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            Files.writeString(tmp, user + "\n" + Base64.getEncoder().encodeToString(secret) + "\n", StandardCharsets.UTF_8,
                    StandardOpenOption.TRUNCATE_EXISTING);
            Files.move(tmp, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle Spark service: cannot record " + app + " under " + dir
                    + " (after a NodeManager restart its shuffle is not served over RDMA): " + e);
        }
    }

    private void forget(String app) {
        java.nio.file.Path dir = recoveryDir();
        if (dir != null) {
            try {
                Files.deleteIfExists(dir.resolve(app));
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "rdma-shuffle Spark service: cannot remove " + dir.resolve(app) + ": " + e);
            }
        }
    }

    /** Serves again the applications recorded before a NodeManager restart. */
    private void recover() throws IOException {
        java.nio.file.Path dir = recoveryDir();
        if (dir == null || !Files.isDirectory(dir)) {
            return;
        }
        int n = 0;
        try (var files = Files.newDirectoryStream(dir, "application_*")) {
            for (java.nio.file.Path f : files) {
                if (f.getFileName().toString().endsWith(".tmp")) {
                    continue;
                }
                List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
                String app = f.getFileName().toString();
                try {
                    if (lines.size() < 2) {
                        throw new IllegalArgumentException(lines.size() + " lines, not 2");
                    }
                    server.applicationStarted(app, lines.get(0), Base64.getDecoder().decode(lines.get(1)));
                    users.put(app, lines.get(0));
                    n++;
                } catch (IllegalArgumentException malformed) {
                    LOG.log(System.Logger.Level.WARNING, "rdma-shuffle Spark service: ignoring malformed record " + f + ": "
                            + malformed.getMessage());
                }
            }
        }
        if (n > 0) {
            LOG.log(System.Logger.Level.INFO, "rdma-shuffle Spark service: serving " + n + " recovered applications again");
        }
    }
}
