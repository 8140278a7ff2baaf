package org.rdmashuffle.hadoop;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapred.ShuffleHandler;
import org.apache.hadoop.mapreduce.MRConfig;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.v2.jobhistory.JHAdminConfig;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.nodemanager.NodeManager;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacitySchedulerConfiguration;
import org.apache.hadoop.yarn.util.resource.DominantResourceCalculator;
import org.apache.hadoop.yarn.util.resource.ResourceUtils;
import org.rdmashuffle.core.config.EngineConfig;

/**
 * The YARN cluster of the two Soft-RoCE hosts ({@code guest-tests.sh --pair}): host 1 runs the
 * ResourceManager and a NodeManager ({@link #main}, one JVM: each JVM start costs a minute or more
 * of the emulated CPU), host 0's NodeManager runs in {@link MapReduceOnLibibverbsAcrossTwoHostsTest}.
 * Each NodeManager serves map outputs with {@link RdmaShuffleService} as {@code mapreduce_shuffle}
 * on the real libibverbs, listening on every address as the shipped yarn-site.xml leaves it.
 *
 * <p>Where tasks run is decided by resources, not timing: the scheduler counts vcores as well as
 * memory (dominant resource), the application master and maps ask for 2 vcores and host 0's node
 * has 1, so they all run on host 1; the reduce asks for more memory than host 1 has left while the
 * application master lives, and fits host 0 exactly. Every block the reduce reads therefore comes
 * across the wire from host 1's service.
 *
 * <p>Staging, input and output live in the directory both guests mount at the same path (the
 * default file system is each host's local one); map outputs stay on the host that made them.
 */
final class TwoHostYarn {
    static final String HOST0 = "host0";
    static final String HOST1 = "host1";
    static final int AM_MB = 512;
    static final int MAP_MB = 256;
    static final int REDUCE_MB = 768;
    /** Room for the application master and two maps, never the reduce beside the master. */
    static final int HOST1_MB = AM_MB + 2 * MAP_MB;
    /** Room for the reduce alone. */
    static final int HOST0_MB = REDUCE_MB;
    /** C1 only and the serial collector: the guest emulates the CPU (see docs/native-verbs.md). */
    static final String JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC --enable-native-access=ALL-UNNAMED";

    private TwoHostYarn() {
    }

    /**
     * The configuration of every process of the cluster on host {@code index}: the ResourceManager
     * on host 1, the NodeManagers, and the job's client on host 0.
     */
    static YarnConfiguration configuration(int index, Path shared) {
        YarnConfiguration conf = new YarnConfiguration();
        conf.set("fs.defaultFS", "file:///");
        conf.set("hadoop.tmp.dir", "/tmp/hadoop-" + index);
        conf.set(YarnConfiguration.RM_HOSTNAME, HOST1);
        conf.set(CapacitySchedulerConfiguration.RESOURCE_CALCULATOR_CLASS, DominantResourceCalculator.class.getName());
        conf.setFloat(CapacitySchedulerConfiguration.MAXIMUM_APPLICATION_MASTERS_RESOURCE_PERCENT, 1.0f);
        conf.setInt(CapacitySchedulerConfiguration.NODE_LOCALITY_DELAY, -1); // file splits have no host to wait for
        conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 128);

        conf.setStrings(YarnConfiguration.NM_AUX_SERVICES, ShuffleHandler.MAPREDUCE_SHUFFLE_SERVICEID);
        conf.set(String.format(YarnConfiguration.NM_AUX_SERVICE_FMT, ShuffleHandler.MAPREDUCE_SHUFFLE_SERVICEID),
                RdmaShuffleService.class.getName());
        conf.set(HadoopSettings.PREFIX + EngineConfig.KEY_PROVIDER, "ibverbs");
        conf.set(YarnConfiguration.NM_LOCAL_DIRS, "/tmp/yarn-" + index + "/local");
        conf.set(YarnConfiguration.NM_LOG_DIRS, logDir(index).toString());
        conf.setInt(YarnConfiguration.NM_PMEM_MB, index == 1 ? HOST1_MB : HOST0_MB);
        conf.setInt(YarnConfiguration.NM_VCORES, index == 1 ? 8 : 1);
        conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
        conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
        // Containers get this JVM's class path: the guest sees the host's build at the same paths.
        conf.set(YarnConfiguration.YARN_APPLICATION_CLASSPATH,
                System.getProperty("java.class.path").replace(java.io.File.pathSeparatorChar, ','));
        conf.set(MRJobConfig.MAPREDUCE_APPLICATION_CLASSPATH, "$PWD");

        conf.set(MRConfig.FRAMEWORK_NAME, MRConfig.YARN_FRAMEWORK_NAME);
        conf.set(MRJobConfig.MR_AM_STAGING_DIR, shared.resolve("staging").toString());
        // No history server: the client reads the job's history file from the shared directory.
        conf.set(JHAdminConfig.MR_HISTORY_ADDRESS, "");
        conf.setInt(MRJobConfig.MR_AM_VMEM_MB, AM_MB);
        conf.setInt(MRJobConfig.MR_AM_CPU_VCORES, 2);
        conf.set(MRJobConfig.MR_AM_COMMAND_OPTS, "-Xmx320m " + JVM_OPTS);
        conf.setInt(MRJobConfig.MAP_MEMORY_MB, MAP_MB);
        conf.setInt(MRJobConfig.MAP_CPU_VCORES, 2);
        conf.set(MRJobConfig.MAP_JAVA_OPTS, "-Xmx192m " + JVM_OPTS);
        conf.setInt(MRJobConfig.IO_SORT_MB, 32); // the default 100 MiB sort buffer does not fit a small map
        conf.setInt(MRJobConfig.REDUCE_MEMORY_MB, REDUCE_MB);
        conf.setInt(MRJobConfig.REDUCE_CPU_VCORES, 1);
        conf.set(MRJobConfig.REDUCE_JAVA_OPTS, "-Xmx400m " + JVM_OPTS);
        conf.setFloat(MRJobConfig.COMPLETED_MAPS_FOR_REDUCE_SLOWSTART, 1.0f);
        // On an emulated CPU one map can take twice as long as the other for no reason of its own; a
        // speculative attempt then only adds a JVM's start to a saturated guest (a CI run had one).
        conf.setBoolean(MRJobConfig.MAP_SPECULATIVE, false);
        conf.setBoolean(MRJobConfig.REDUCE_SPECULATIVE, false);
        // What the test waits for, not what it tests: the job client's completion poll (5 s by default),
        // the RM's offers to a node and the AM's asks (1 s each), and the wait for a container's pid file.
        conf.setInt(org.apache.hadoop.mapreduce.Job.COMPLETION_POLL_INTERVAL_KEY, 500);
        conf.setInt(org.apache.hadoop.mapreduce.Job.PROGRESS_MONITOR_POLL_INTERVAL_KEY, 500);
        conf.setLong(YarnConfiguration.RM_NM_HEARTBEAT_INTERVAL_MS, 500);
        conf.setInt(MRJobConfig.MR_AM_TO_RM_HEARTBEAT_INTERVAL_MS, 500);
        conf.setLong(YarnConfiguration.NM_PROCESS_KILL_WAIT_MS, 500);
        conf.set(RdmaShuffleConsumerPlugin.CONSUMER_PLUGIN_KEY, RdmaShuffleConsumerPlugin.class.getName());
        conf.setBoolean(HadoopSettings.MAPREDUCE_FALLBACK, false); // a block not over RDMA fails the job
        // Resource types (and the smallest allocation with them) are cached per JVM from the first
        // configuration YARN sees, yarn-site.xml's: there is none here, so they take these settings now.
        ResourceUtils.resetResourceTypes(conf);
        return conf;
    }

    /**
     * Hadoop's INFO log of this JVM's daemons into {@code file} (what the cluster decided, container by
     * container); the console keeps warnings only.
     */
    static void logTo(Path file) throws java.io.IOException {
        org.apache.log4j.Logger root = org.apache.log4j.Logger.getRootLogger();
        java.util.Collections.list(root.getAllAppenders()).forEach(a -> {
            if (a instanceof org.apache.log4j.AppenderSkeleton s) {
                s.setThreshold(org.apache.log4j.Level.WARN);
            }
        });
        root.addAppender(new org.apache.log4j.FileAppender(
                new org.apache.log4j.PatternLayout("%d{ISO8601} %-5p [%t] %c{2}: %m%n"), file.toString(), false));
        root.setLevel(org.apache.log4j.Level.INFO);
    }

    /** Where host {@code index}'s NodeManager keeps its containers' logs. */
    static Path logDir(int index) {
        return Path.of("/tmp/yarn-" + index + "/logs");
    }

    /**
     * Host 1: {@code TwoHostYarn SHARED STOP_FILE} starts the ResourceManager and this host's
     * NodeManager, prints READY once the node has registered, and stops both once STOP_FILE exists.
     */
    public static void main(String[] args) {
        int status = 0;
        try {
            serve(Path.of(args[0]), Path.of(args[1]));
        } catch (Throwable t) {
            t.printStackTrace();
            status = 1;
        }
        System.exit(status); // Hadoop leaves non-daemon threads behind, after a failure too
    }

    private static void serve(Path shared, Path stop) throws Exception {
        logTo(shared.resolve("yarn-" + HOST1 + ".log"));
        Configuration conf = configuration(1, shared);
        ResourceManager rm = new ResourceManager();
        NodeManager nm = new NodeManager();
        try {
            rm.init(conf);
            rm.start();
            nm.init(conf);
            nm.start();
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(20);
            while (rm.getRMContext().getRMNodes().isEmpty()) {
                if (System.nanoTime() > deadline || Files.exists(stop)) {
                    throw new IllegalStateException("host 1's NodeManager did not register with the ResourceManager");
                }
                Thread.sleep(200);
            }
            System.out.println("READY ResourceManager and NodeManager on " + HOST1);
            while (!Files.exists(stop)) {
                Thread.sleep(500);
            }
        } finally {
            // Bounded: past stopping its containers, a NodeManager's stop waits 10 s on a log-deletion timer
            // it then cancels (Hadoop's NonAggregatingLogHandler), slower still on the emulated CPU; the
            // test is over by now, and this JVM's exit ends what is left.
            Thread stopping = Thread.ofPlatform().daemon().start(nm::stop);
            stopping.join(TimeUnit.SECONDS.toMillis(5));
            rm.stop();
        }
    }
}
