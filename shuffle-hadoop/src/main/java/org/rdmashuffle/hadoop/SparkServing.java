package org.rdmashuffle.hadoop;

import java.io.IOException;
import java.net.InetSocketAddress;
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
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.server.api.AuxiliaryLocalPathHandler;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.server.files.Confinement;
import org.rdmashuffle.core.service.SparkShuffleServer;
import org.rdmashuffle.verbs.Verbs;

/**
 * The engine side of {@link RdmaSparkShuffleService}: a {@link SparkShuffleServer} serving Spark
 * applications' map outputs from the node's disks ({@code usercache/<user>/appcache/<application>/blockmgr-*}),
 * its metrics2 source ({@link ServiceMetrics}), and the applications' users and secrets kept under the
 * NodeManager's recovery path (files readable by the NodeManager alone) so a restarted NodeManager
 * serves running applications again. Made by name by the service, which owns it; built for the
 * engine's Java.
 */
public final class SparkServing implements ServiceEngine.ForSpark {
    private static final System.Logger LOG = System.getLogger(SparkServing.class.getName());
    /** Under the recovery path: one file per served application (user, secret). */
    static final String RECOVERY_DIR = "rdma-spark-applications";
    static final int DEFAULT_SPARK_SERVICE_PORT = 13571;

    private final AuxiliaryLocalPathHandler localDirs;
    private final java.nio.file.Path recoveryDir;
    private final Map<String, String> users = new ConcurrentHashMap<>();
    private final SparkShuffleServer server;
    private final ServiceMetrics metrics;

    /**
     * Checks the settings, starts the engine and serves again the applications recorded before a
     * restart; throws, having started nothing, if it cannot.
     *
     * @param recoveryPath the NodeManager's recovery path for this service, or null (no recovery)
     */
    public SparkServing(Configuration conf, AuxiliaryLocalPathHandler localDirs, Path recoveryPath) {
        this.localDirs = localDirs;
        this.recoveryDir = recoveryPath == null ? null : java.nio.file.Path.of(recoveryPath.toUri().getPath(), RECOVERY_DIR);
        HadoopSettingsCheck.check(conf, "the NodeManager's spark_shuffle service");
        EngineConfig engineConfig = HadoopSettings.serviceEngineConfig(conf, conf.getInt(HadoopKeys.SPARK_SERVICE_PORT,
                DEFAULT_SPARK_SERVICE_PORT));
        SparkShuffleServer s = new SparkShuffleServer(engineConfig, this::confinement,
                Verbs.choose(engineConfig.provider(), engineConfig.providerSettings()).orElseThrow());
        try {
            recover(s);
            metrics = ServiceMetrics.register(RdmaSparkShuffleService.METRICS_SOURCE, "rdma-shuffle Spark service engine",
                    s.engine(), s::outputsResolved);
        } catch (IOException | RuntimeException e) {
            s.close();
            throw e instanceof IOException io ? new java.io.UncheckedIOException("cannot read the applications recorded "
                    + "before a restart: " + io.getMessage(), io) : (RuntimeException) e;
        }
        server = s;
    }

    @Override
    public void applicationStarted(String app, String user, byte[] secret) {
        server.applicationStarted(app, user, secret);
        users.put(app, user);
        remember(app, user, secret);
    }

    @Override
    public int applicationStopped(String app) {
        users.remove(app);
        forget(app);
        int outputs = server.applicationStopped(app);
        LOG.log(System.Logger.Level.DEBUG, () -> "rdma-shuffle Spark service: " + app + " stopped, " + outputs
                + " map outputs forgotten");
        return outputs;
    }

    @Override
    public InetSocketAddress address() {
        return server.address();
    }

    @Override
    public ServiceMetrics metrics() {
        return metrics;
    }

    SparkShuffleServer server() {
        return server;
    }

    /** Unregisters the metrics source, then closes the server (both, even if the first throws). */
    @Override
    public void close() {
        try {
            metrics.unregister();
        } finally {
            server.close();
        }
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
            for (Path p : localDirs.getAllLocalPathsForRead(appDir)) {
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

    /**
     * Writes the application's user and secret where only the NodeManager's user can read them. A write
     * that fails (the recovery path's disk full: {@code ENOSPC}) leaves no partial record behind: the
     * application is served all the same, only not again after a restart, and the WARN says so.
     */
    private void remember(String app, String user, byte[] secret) {
        java.nio.file.Path dir = recoveryDir;
        if (dir == null) {
            return;
        }
        java.nio.file.Path tmp = dir.resolve(app + ".tmp");
        try {
            Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            java.nio.file.Path file = dir.resolve(app);
            Files.deleteIfExists(tmp);
            Files.createFile(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            Files.writeString(tmp, user + "\n" + Base64.getEncoder().encodeToString(secret) + "\n", StandardCharsets.UTF_8,
                    StandardOpenOption.TRUNCATE_EXISTING);
            Files.move(tmp, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            try {
                Files.deleteIfExists(tmp); // a part of the secret, and a file per application, otherwise left for good
            } catch (IOException cannotRemove) {
                e.addSuppressed(cannotRemove);
            }
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle Spark service: cannot record " + app + " under " + dir
                    + " (after a NodeManager restart its shuffle is not served over RDMA): " + e);
        }
    }

    private void forget(String app) {
        java.nio.file.Path dir = recoveryDir;
        if (dir != null) {
            try {
                Files.deleteIfExists(dir.resolve(app));
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "rdma-shuffle Spark service: cannot remove " + dir.resolve(app) + ": " + e);
            }
        }
    }

    /** Serves again the applications recorded before a NodeManager restart. */
    private void recover(SparkShuffleServer server) throws IOException {
        java.nio.file.Path dir = recoveryDir;
        if (dir == null || !Files.isDirectory(dir)) {
            return;
        }
        int n = 0;
        try (var files = Files.newDirectoryStream(dir, "application_*")) {
            for (java.nio.file.Path f : files) {
                if (f.getFileName().toString().endsWith(".tmp")) {
                    Files.deleteIfExists(f); // a record whose write a NodeManager's end cut short: nobody writes it now
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
