package org.rdmashuffle.benchmarks.cluster;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Spark's standalone cluster on a {@link ClusterBed}: the Master in the bed's first host, the driver's
 * host second, and a Worker in each further host, each a separate process of Spark's own classes
 * started inside its host. Logs go to {@code logs/} under the run directory. Workers run with
 * {@code spark.decommission.enabled}, as an operator who decommissions nodes runs them: signal PWR (what
 * {@code sbin/decommission-worker.sh} sends) and the Worker is decommissioned ({@link #decommissionWorker}).
 */
public final class StandaloneCluster implements AutoCloseable {
    static final int MASTER_PORT = 7077;
    /**
     * What each Worker offers its executor (an offer, not an allocation: the executor takes
     * spark.executor.memory, 1g unless ClusterJob --executor-memory says otherwise).
     */
    static final int WORKER_MEMORY_MIB = 8192;
    private static final long START_SECONDS = 180;
    private static final Pattern REGISTERED = Pattern.compile("Registering worker (\\S+):\\d+");
    private static final Pattern LAUNCHED = Pattern.compile("Asked to launch executor (\\S+) for");
    private static final Pattern FINISHED = Pattern.compile("Executor (\\S+) finished with state");

    private final ClusterBed bed;
    private final SparkHome home;
    private final Path logs;
    private final Daemons daemons;

    private StandaloneCluster(ClusterBed bed, SparkHome home, Path logs) {
        this.bed = bed;
        this.home = home;
        this.logs = logs;
        this.daemons = new Daemons(logs, "Spark", 20);
    }

    /**
     * Starts the Master and one Worker per host after the second, and waits until every Worker has
     * registered with the Master (bounded).
     *
     * @param workerCores cores each Worker offers (one executor per Worker takes them all)
     */
    public static StandaloneCluster start(ClusterBed bed, SparkHome home, Path runDir, int workerCores) throws IOException,
            InterruptedException {
        if (bed.hosts().size() < 4) {
            throw new IllegalArgumentException("a standalone cluster needs a host for the Master, one for the driver and "
                    + "at least two for Workers: " + bed.hosts().size() + " hosts given");
        }
        StandaloneCluster c = new StandaloneCluster(bed, home, Files.createDirectories(runDir.resolve("logs")));
        try {
            ClusterBed.Host master = bed.hosts().get(0);
            c.daemon(master, "master", "org.apache.spark.deploy.master.Master",
                    List.of("--host", master.address(), "--port", Integer.toString(MASTER_PORT), "--webui-port", "8080"),
                    Map.of());
            for (ClusterBed.Host w : c.workerHosts()) {
                Path dir = Files.createDirectories(runDir.resolve(w.namespace().substring(w.namespace().lastIndexOf('-') + 1)));
                c.daemon(w, "worker-" + w.address(), "org.apache.spark.deploy.worker.Worker",
                        List.of("--host", w.address(), "--cores", Integer.toString(workerCores), "--memory", WORKER_MEMORY_MIB + "m",
                                "--work-dir", dir.resolve("work").toString(), c.masterUrl()),
                        Map.of("SPARK_LOCAL_DIRS", w.dataDir(dir, "local").toString(),
                                "SPARK_WORKER_OPTS", "-Dspark.decommission.enabled=true"));
            }
            c.awaitWorkers();
            return c;
        } catch (IOException | InterruptedException | RuntimeException e) {
            c.close();
            throw e;
        }
    }

    public String masterUrl() {
        return "spark://" + bed.hosts().get(0).address() + ":" + MASTER_PORT;
    }

    public ClusterBed.Host driverHost() {
        return bed.hosts().get(1);
    }

    public List<ClusterBed.Host> workerHosts() {
        return bed.hosts().subList(2, bed.hosts().size());
    }

    public SparkHome home() {
        return home;
    }

    /**
     * Starts {@code spark-submit} in client mode in the driver's host: {@code --master} this cluster, the
     * driver bound to its host's address, {@code sparkConfs} as {@code --conf}s, everything else from the
     * installation's spark-defaults.conf. Standard error goes to {@code logs/<logName>}; the caller owns
     * the process (its standard input and output are piped to the caller).
     */
    public Process submit(String mainClass, Path appJar, List<String> sparkConfs, List<String> appArgs, String logName)
            throws IOException, InterruptedException {
        ClusterBed.Host d = driverHost();
        List<String> args = new ArrayList<>(List.of("--master", masterUrl(), "--deploy-mode", "client",
                "--conf", "spark.driver.host=" + d.address(), "--conf", "spark.driver.bindAddress=" + d.address()));
        for (String c : sparkConfs) {
            args.addAll(List.of("--conf", c));
        }
        args.addAll(List.of("--class", mainClass, appJar.toString()));
        args.addAll(appArgs);
        Map<String, String> env = home.environment(d.address());
        ProcessBuilder pb = new ProcessBuilder(d.command(home.command("org.apache.spark.deploy.SparkSubmit", args, env)))
                .redirectError(logs.resolve(logName).toFile());
        pb.environment().putAll(env);
        return pb.start();
    }

    /**
     * Decommissions the Worker of host {@code w} (signal PWR): it tells the Master, which tells each
     * application's driver; the driver asks the Worker's executors to decommission, and each one
     * (with {@code spark.storage.decommission.enabled}) moves its blocks to other executors and exits.
     * Waits until every executor the Worker ran has ended (its log says so), at most {@code seconds}.
     */
    public void decommissionWorker(ClusterBed.Host w, long seconds) throws IOException, InterruptedException {
        String log = "worker-" + w.address() + ".log";
        daemons.signal("worker-" + w.address(), "PWR");
        if (!daemons.awaitLog(log, text -> executorsRunning(text).isEmpty(), seconds)) {
            throw new IOException("executors " + executorsRunning(Files.readString(logs.resolve(log))) + " of the Worker at "
                    + w.address() + " still run " + seconds + " s after it was decommissioned; see " + logs.resolve(log));
        }
    }

    /** The executors a Worker's log says it launched and has not seen finish. */
    private static java.util.Set<String> executorsRunning(String workerLog) {
        java.util.Set<String> running = new java.util.HashSet<>();
        for (java.util.regex.Matcher m = LAUNCHED.matcher(workerLog); m.find(); ) {
            running.add(m.group(1));
        }
        for (java.util.regex.Matcher m = FINISHED.matcher(workerLog); m.find(); ) {
            running.remove(m.group(1));
        }
        return running;
    }

    private void daemon(ClusterBed.Host host, String name, String className, List<String> args, Map<String, String> extraEnv)
            throws IOException, InterruptedException {
        Map<String, String> env = new java.util.HashMap<>(home.environment(host.address()));
        env.putAll(extraEnv);
        daemons.start(host, name, home.command(className, args, env), env);
    }

    private void awaitWorkers() throws IOException, InterruptedException {
        daemons.awaitRegistered("master.log", REGISTERED, workerHosts().size(), START_SECONDS, "Workers registered with the Master");
    }

    public Path logs() {
        return logs;
    }

    /** Stops the daemons (TERM, so Workers stop their executors; then KILL), bounded. */
    @Override
    public void close() throws InterruptedException {
        daemons.close();
    }
}
