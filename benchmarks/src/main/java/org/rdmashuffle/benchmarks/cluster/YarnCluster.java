package org.rdmashuffle.benchmarks.cluster;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * A YARN cluster on a {@link ClusterBed}, each daemon a separate JVM of Hadoop 3.5's own jars ({@link
 * HadoopHome}) started inside its host: the ResourceManager and MapReduce's JobHistoryServer in the
 * bed's first host, the job client's
 * host second, and a NodeManager in each further host, serving shuffles with the project's {@code -yarn}
 * jar loaded through the aux-service class path, as conf/yarn-site.xml ships it.
 *
 * <p>Each host has its own {@code etc/hadoop}, local dirs and logs under {@code <run dir>/<host>/}. The
 * file system is the machine's own ({@code file:///}): every host sees the run directory at one path,
 * which is what a shared file system would give (input, output and staging live there; map outputs
 * stay in the local dirs of the node that wrote them).
 *
 * <p>The cluster's own settings are what an operator of any small cluster has: where the
 * ResourceManager is, each node's name ({@code yarn.nodemanager.hostname}: its address on the bed, as
 * the machine's host name is the same in every namespace), its memory, its dirs, and MapReduce's
 * {@code HADOOP_MAPRED_HOME}. Memory is sized so that placement is decided by room, not timing: a node
 * fits two maps (or the application master and two maps) and one reduce, so a job of four maps and two
 * reduces runs maps on both nodes and one reduce on each, and every reduce reads across hosts.
 */
public final class YarnCluster implements AutoCloseable {
    public static final int NODE_MB = 2048;
    public static final int AM_MB = 512;
    public static final int MAP_MB = 768;
    public static final int REDUCE_MB = 1536;
    private static final long START_SECONDS = 180;
    private static final String NODE_MANAGER_CLASS = "org.apache.hadoop.yarn.server.nodemanager.NodeManager";
    /**
     * A NodeManager told to stop has stopped its containers within about 2 s (process-kill-wait below);
     * the rest of its stop is 10 s of Hadoop's NonAggregatingLogHandler awaiting a log-deletion timer
     * set hours ahead, which it then cancels: KILL after this, as the bed would at its close anyway.
     */
    private static final long NODE_MANAGER_GRACE_SECONDS = 5;
    /**
     * Sooner than that: once a NodeManager told to stop has stopped its container manager's server
     * (logged after its wait for the applications' containers, before that 10 s wait), nothing of its
     * stop that matters is left; KILL then (what it launched goes too).
     */
    private static final java.util.function.Predicate<String> NODE_MANAGER_STOPPED = log -> {
        int term = log.lastIndexOf("RECEIVED SIGNAL 15: SIGTERM");
        return term >= 0 && log.indexOf("ipc.Server: Stopping server on ", term) >= 0;
    };
    private static final long GRACE_SECONDS = 30;
    private static final Pattern REGISTERED = Pattern.compile("NodeManager from node (\\S+)\\(cmPort");
    /**
     * The bed's JVMs on a 2-core machine, as its daemons, MapReduce's application masters and maps run:
     * C1 only and the serial collector. What a job computes does not depend on them; C2's compiler
     * threads and G1's would take the cores from the JVMs starting beside them.
     */
    static final String JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC";
    /**
     * What every Spark application on the bed gets before its own {@code --conf}s: {@link #JVM_OPTIONS}
     * for its driver, application master and executors (added to the shipped defaultJavaOptions), and
     * the client's poll of the application's state every 250 ms instead of every second until it runs.
     */
    static final List<String> SPARK_BED_SETTINGS = List.of("spark.driver.extraJavaOptions=" + JVM_OPTIONS,
            "spark.yarn.am.extraJavaOptions=" + JVM_OPTIONS, "spark.executor.extraJavaOptions=" + JVM_OPTIONS,
            "spark.yarn.report.interval=250ms");
    /**
     * Left out of {@code yarn.nodemanager.aux-services} when no stand-in for Spark's YARN shuffle jar is
     * given: that jar, which conf/yarn-site.xml's spark_shuffle needs, is not on this build's Maven mirror.
     */
    static final List<String> SERVICES_LEFT_OUT = List.of("spark_shuffle");

    private final ClusterBed bed;
    private final HadoopHome home;
    private final Path runDir;
    private final Path logs;
    private final Daemons daemons;
    private final Map<String, String> extraYarnSettings;

    private YarnCluster(ClusterBed bed, HadoopHome home, Path runDir, Map<String, String> extraYarnSettings)
            throws IOException {
        this.bed = bed;
        this.home = home;
        this.runDir = runDir;
        this.extraYarnSettings = Map.copyOf(extraYarnSettings);
        this.logs = Files.createDirectories(runDir.resolve("logs"));
        this.daemons = new Daemons(logs, "YARN", GRACE_SECONDS);
    }

    /** Starts the ResourceManager and the NodeManagers and waits until every node has registered (bounded). */
    public static YarnCluster start(ClusterBed bed, HadoopHome home, Path runDir) throws IOException, InterruptedException {
        return start(bed, home, runDir, Map.of());
    }

    /** As {@link #start(ClusterBed, HadoopHome, Path)}, with {@code extraYarnSettings} in every host's yarn-site.xml. */
    public static YarnCluster start(ClusterBed bed, HadoopHome home, Path runDir, Map<String, String> extraYarnSettings)
            throws IOException, InterruptedException {
        if (bed.hosts().size() < 4) {
            throw new IllegalArgumentException("a YARN cluster here needs a host for the ResourceManager, one for the "
                    + "client and at least two for NodeManagers: " + bed.hosts().size() + " hosts given");
        }
        YarnCluster c = new YarnCluster(bed, home, runDir, extraYarnSettings);
        try {
            for (ClusterBed.Host h : bed.hosts()) {
                home.writeConf(c.confDir(h), coreSettings(c.hostDir(h)), c.yarnSettings(h), c.mapredSettings(),
                        home.hasSparkService() ? List.of() : SERVICES_LEFT_OUT);
                HadoopHome.writeProperties(c.confDir(h).resolve("capacity-scheduler.xml"), Map.of(
                        "yarn.scheduler.capacity.root.queues", "default",
                        "yarn.scheduler.capacity.root.default.capacity", "100",
                        "yarn.scheduler.capacity.maximum-am-resource-percent", "0.5"));
            }
            c.daemon(c.resourceManagerHost(), "resourcemanager", "384m",
                    "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager",
                    GRACE_SECONDS);
            c.daemon(c.resourceManagerHost(), "historyserver", "256m",
                    "org.apache.hadoop.mapreduce.v2.hs.JobHistoryServer",
                    GRACE_SECONDS);
            for (ClusterBed.Host h : c.nodeHosts()) {
                c.daemon(h, "nodemanager-" + h.address(), "384m", NODE_MANAGER_CLASS,
                        NODE_MANAGER_GRACE_SECONDS);
            }
            c.awaitNodes();
            return c;
        } catch (IOException | InterruptedException | RuntimeException e) {
            c.close();
            throw e;
        }
    }

    public ClusterBed.Host resourceManagerHost() {
        return bed.hosts().get(0);
    }

    public ClusterBed.Host clientHost() {
        return bed.hosts().get(1);
    }

    public List<ClusterBed.Host> nodeHosts() {
        return bed.hosts().subList(2, bed.hosts().size());
    }

    public HadoopHome home() {
        return home;
    }

    public Path logs() {
        return logs;
    }

    /** Where host {@code h} keeps its conf, local dirs and container logs. */
    public Path hostDir(ClusterBed.Host h) {
        return runDir.resolve(h.namespace().substring(h.namespace().lastIndexOf('-') + 1));
    }

    /** Host {@code h}'s NodeManager local dir: on the host's own disk when the bed gave it one. */
    public Path localDir(ClusterBed.Host h) {
        return (h.disk() != null ? h.disk() : hostDir(h)).resolve("local");
    }

    /** The container logs of host {@code h}'s NodeManager ({@code <app>/<container>/stdout, stderr, syslog}). */
    public Path containerLogs(ClusterBed.Host h) {
        return hostDir(h).resolve("containers");
    }

    private Path confDir(ClusterBed.Host h) {
        return hostDir(h).resolve("etc/hadoop");
    }

    private static Map<String, String> coreSettings(Path hostDir) {
        Map<String, String> core = new LinkedHashMap<>();
        core.put("fs.defaultFS", "file:///");
        core.put("hadoop.tmp.dir", hostDir + "/tmp");
        // A task moves the default file system's working directory to the job's; with file:/// as the
        // default that would be the one local file system instance every caller shares, and relative
        // local paths (TeraSort's partition file, linked into the container's directory) would miss.
        core.put("fs.file.impl.disable.cache", "true");
        // Each daemon's metrics2 figures in Prometheus' format at /prom, as conf/grafana's dashboard reads them.
        core.put("hadoop.prometheus.endpoint.enabled", "true");
        return core;
    }

    private Map<String, String> yarnSettings(ClusterBed.Host h) {
        Map<String, String> y = new LinkedHashMap<>();
        y.put("yarn.resourcemanager.hostname", resourceManagerHost().address());
        y.put("yarn.nodemanager.hostname", h.address());
        y.put("yarn.nodemanager.local-dirs", localDir(h).toString());
        y.put("yarn.nodemanager.log-dirs", containerLogs(h).toString());
        y.put("yarn.nodemanager.resource.memory-mb", Integer.toString(NODE_MB));
        y.put("yarn.scheduler.minimum-allocation-mb", "256");
        // What a test waits for, not what it tests: the RM's offers to a node, the wait for a container's pid
        // file and a job client's polls (mapred-site) are seconds each by default, several times a job.
        y.put("yarn.resourcemanager.nodemanagers.heartbeat-interval-ms", "250");
        y.put("yarn.nodemanager.process-kill-wait.ms", "500");
        y.put("yarn.nodemanager.pmem-check-enabled", "false");
        y.put("yarn.nodemanager.vmem-check-enabled", "false");
        // Build machines' disks are often fuller than the 90 % at which a node calls its dirs bad.
        y.put("yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage", "99.9");
        y.put("yarn.nodemanager.disk-health-checker.min-free-space-per-disk-mb", "64");
        y.putAll(extraYarnSettings);
        return y;
    }

    private Map<String, String> mapredSettings() {
        String mapredHome = "HADOOP_MAPRED_HOME=" + home.dir();
        Map<String, String> m = new LinkedHashMap<>();
        m.put("mapreduce.framework.name", "yarn");
        m.put("yarn.app.mapreduce.am.scheduler.heartbeat.interval-ms", "250");
        m.put("mapreduce.client.completion.pollinterval", "250");
        m.put("mapreduce.client.progressmonitor.pollinterval", "250");
        // A job's client asks the history server for the final status once the application master is gone.
        m.put("mapreduce.jobhistory.address", resourceManagerHost().address() + ":10020");
        m.put("mapreduce.jobhistory.webapp.address", resourceManagerHost().address() + ":19888");
        m.put("mapreduce.jobhistory.intermediate-done-dir", runDir.resolve("history/intermediate").toString());
        m.put("mapreduce.jobhistory.done-dir", runDir.resolve("history/done").toString());
        m.put("yarn.app.mapreduce.am.staging-dir", runDir.resolve("staging").toString());
        m.put("yarn.app.mapreduce.am.env", mapredHome);
        m.put("mapreduce.map.env", mapredHome);
        m.put("mapreduce.reduce.env", mapredHome);
        m.put("yarn.app.mapreduce.am.resource.mb", Integer.toString(AM_MB));
        m.put("yarn.app.mapreduce.am.command-opts", "-Xmx384m " + JVM_OPTIONS);
        m.put("mapreduce.map.memory.mb", Integer.toString(MAP_MB));
        m.put("mapreduce.map.java.opts", "-Xmx512m " + JVM_OPTIONS);
        m.put("mapreduce.reduce.memory.mb", Integer.toString(REDUCE_MB));
        return m;
    }

    /** The JVM of node {@code h}'s NodeManager (the one started with the cluster), for its {@code /proc} figures. */
    public ProcessHandle nodeManagerJvm(ClusterBed.Host h) {
        return daemons.jvm("nodemanager-" + h.address(), NODE_MANAGER_CLASS);
    }

    /**
     * The processes of application {@code appId}'s containers still running: its application master and
     * tasks (each container's JVM names its log dir, {@code <log dirs>/<appId>/<container>}, on its command
     * line) and the launch scripts around them.
     */
    public List<ProcessHandle> containerProcesses(String appId) {
        String dir = "/" + appId + "/";
        long self = ProcessHandle.current().pid();
        return ProcessHandle.allProcesses().filter(p -> p.pid() != self)
                .filter(p -> org.rdmashuffle.benchmarks.spark.RunSeparation.commandLine(p).map(c -> c.contains(dir)).orElse(false))
                .toList();
    }

    /** A NodeManager's web address (its /jmx and /prom servlets). */
    public static String nodeManagerWeb(ClusterBed.Host node) {
        return "http://" + node.address() + ":8042";
    }

    /**
     * GETs {@code url} from the client's host (the bed's addresses are reachable only from inside
     * its namespaces) and returns the body; fails naming the URL if it does not answer 200 in 10 s.
     */
    public String httpGet(String url) throws IOException, InterruptedException {
        List<String> command = clientHost().command(List.of("python3", "-c", "import sys, urllib.request; "
                + "sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())", url));
        Process p = new ProcessBuilder(command).redirectErrorStream(false).start();
        p.getOutputStream().close();
        byte[] body = p.getInputStream().readAllBytes();
        String err = new String(p.getErrorStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
            p.destroyForcibly();
            throw new IOException("GET " + url + " from " + clientHost().address() + " failed: " + err.strip());
        }
        return new String(body, java.nio.charset.StandardCharsets.UTF_8);
    }

    /**
     * Runs {@code hadoop jar <examples> PROGRAM ARGS} in the client's host and returns its exit status;
     * its output (the job's progress and counters) goes to {@code logs/<logName>}. Bounded by {@code minutes}.
     */
    public int runExample(String logName, long minutes, List<String> programAndArgs) throws IOException,
            InterruptedException {
        ClusterBed.Host client = clientHost();
        List<String> args = new ArrayList<>(List.of(home.examplesJar().toString()));
        args.addAll(programAndArgs);
        List<String> command = home.command(confDir(client), "512m", logs, logName,
                "org.apache.hadoop.util.RunJar", args);
        ProcessBuilder pb = new ProcessBuilder(client.command(command)).redirectErrorStream(true)
                .redirectOutput(logs.resolve(logName).toFile());
        pb.environment().putAll(home.environment(confDir(client)));
        Process p = pb.start();
        p.getOutputStream().close();
        if (!p.waitFor(minutes, TimeUnit.MINUTES)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            throw new IOException(String.join(" ", programAndArgs) + " did not finish in " + minutes + " min; see "
                    + logs.resolve(logName));
        }
        return p.exitValue();
    }

    /**
     * Starts {@code spark-submit --master yarn --deploy-mode client} in the client's host, with this
     * cluster's yarn-site.xml ({@code HADOOP_CONF_DIR}), the driver bound to the client's address,
     * Spark's jars taken from the installation on every node ({@code spark.yarn.jars=local:...}, as
     * every host sees one file system) and not mixed with Hadoop's ({@code populateHadoopClasspath=false}:
     * the installation carries Spark's own Hadoop client), {@link #SPARK_BED_SETTINGS}, then {@code
     * sparkConfs} as {@code --conf}s (a test's own win) and the rest from the installation's spark-defaults.conf. Standard error goes to {@code logs/<logName>};
     * the caller owns the process (its standard output is piped to the caller).
     */
    public Process submitSpark(SparkHome spark, String mainClass, Path appJar, List<String> sparkConfs, List<String> appArgs,
            String logName) throws IOException, InterruptedException {
        ClusterBed.Host client = clientHost();
        List<String> args = new ArrayList<>(List.of("--master", "yarn", "--deploy-mode", "client",
                "--conf", "spark.driver.host=" + client.address(), "--conf", "spark.driver.bindAddress=" + client.address(),
                "--conf", "spark.yarn.jars=local:" + spark.dir().resolve("jars") + "/*",
                "--conf", "spark.yarn.populateHadoopClasspath=false",
                "--conf", "spark.yarn.stagingDir=" + runDir.resolve("staging")));
        for (String c : SPARK_BED_SETTINGS) {
            args.addAll(List.of("--conf", c));
        }
        for (String c : sparkConfs) {
            args.addAll(List.of("--conf", c));
        }
        args.addAll(List.of("--class", mainClass, appJar.toString()));
        args.addAll(appArgs);
        Map<String, String> env = spark.environment(client.address());
        env.put("HADOOP_CONF_DIR", confDir(client).toString());
        env.put("YARN_CONF_DIR", confDir(client).toString());
        ProcessBuilder pb = new ProcessBuilder(client.command(spark.command("org.apache.spark.deploy.SparkSubmit", args, env)))
                .redirectError(logs.resolve(logName).toFile());
        pb.environment().putAll(env);
        return pb.start();
    }

    /**
     * The node whose NodeManager runs the newest application's master (its first container), read from
     * the nodes' container logs; null if no node has started one.
     */
    public ClusterBed.Host applicationMasterHost() throws IOException {
        String newest = null;
        ClusterBed.Host host = null;
        for (ClusterBed.Host h : nodeHosts()) {
            if (!Files.isDirectory(containerLogs(h))) {
                continue;
            }
            try (var apps = Files.list(containerLogs(h))) {
                for (Path app : apps.toList()) {
                    String id = app.getFileName().toString();
                    boolean master;
                    try (var containers = Files.list(app)) {
                        master = containers.anyMatch(c -> c.getFileName().toString().endsWith("_01_000001"));
                    }
                    // application_<cluster start>_<sequence>: one cluster, so the sequence orders them.
                    if (master && (newest == null || id.compareTo(newest) > 0)) {
                        newest = id;
                        host = h;
                    }
                }
            }
        }
        return host;
    }

    /**
     * Kills node {@code h}'s NodeManager (KILL: its RDMA and Spark shuffle services go with it, it says
     * goodbye to nobody), then waits until the ResourceManager has declared the node lost, which takes
     * {@code yarn.nm.liveness-monitor.expiry-interval-ms} (10 minutes unless the cluster was started with less).
     */
    public void killNodeManager(ClusterBed.Host h, long awaitLostSeconds) throws IOException, InterruptedException {
        daemons.kill("nodemanager-" + h.address());
        Pattern lost = Pattern.compile("Deactivating Node " + Pattern.quote(h.address()) + ":\\d+ as it is now LOST");
        if (!daemons.awaitLog("resourcemanager.log", text -> lost.matcher(text).find(), awaitLostSeconds)) {
            throw new IOException("the ResourceManager did not declare " + h.address() + " lost within " + awaitLostSeconds
                    + " s of its NodeManager's death; see " + logs.resolve("resourcemanager.log"));
        }
    }

    /**
     * Kills node {@code h}'s NodeManager (KILL, as a crash: its services go with it, its containers stay)
     * and starts it again on the same host with the same configuration, as an operator's supervisor
     * would; waits (bounded) until the new one has registered with the ResourceManager. With
     * {@code yarn.nodemanager.recovery.enabled} it recovers its applications and containers, and hands
     * its auxiliary services their recovery path. The new NodeManager's log is {@code
     * logs/nodemanager-<address>-restarted.log}.
     */
    public void restartNodeManager(ClusterBed.Host h) throws IOException, InterruptedException {
        daemons.kill("nodemanager-" + h.address());
        String name = "nodemanager-" + h.address() + "-restarted";
        daemon(h, name, "384m", NODE_MANAGER_CLASS, NODE_MANAGER_GRACE_SECONDS);
        if (!daemons.awaitLog(name + ".log", text -> text.contains("Registered with ResourceManager as"), START_SECONDS)) {
            throw new IOException("the restarted NodeManager of " + h.address() + " did not register within " + START_SECONDS
                    + " s; see " + logs.resolve(name + ".log"));
        }
    }

    private void daemon(ClusterBed.Host host, String name, String heap, String className, long graceSeconds)
            throws IOException {
        daemons.start(host, name, home.command(confDir(host), heap, logs, name + ".log", className, List.of()),
                home.environment(confDir(host)), graceSeconds, name.startsWith("nodemanager-") ? NODE_MANAGER_STOPPED : null);
    }

    private void awaitNodes() throws IOException, InterruptedException {
        daemons.awaitRegistered("resourcemanager.log", REGISTERED, nodeHosts().size(), START_SECONDS,
                "NodeManagers registered with the ResourceManager");
    }

    /** Stops the daemons (TERM, so NodeManagers stop their containers and services; then KILL), bounded. */
    @Override
    public void close() throws InterruptedException {
        daemons.close();
    }
}
