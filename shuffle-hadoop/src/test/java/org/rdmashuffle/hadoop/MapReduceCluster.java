package org.rdmashuffle.hadoop;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.ShuffleHandler;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.v2.MiniMRYarnCluster;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.rdmashuffle.core.config.EngineConfig;

/**
 * A YARN cluster in the test JVM (resource manager, one NodeManager, history server) whose
 * NodeManager runs {@link RdmaShuffleService} as {@code mapreduce_shuffle}, as yarn-site.xml would
 * say; application master and tasks run in their own JVMs, small enough for 2 cores. Their logs
 * stay under {@code target/test/data/rdma-shuffle/} (MiniYARNCluster's NodeManager log dirs).
 */
final class MapReduceCluster implements AutoCloseable {
    final MiniMRYarnCluster yarn;
    final int rdmaPort;

    /**
     * MiniMRYarnCluster sets the NodeManager's auxiliary services to the stock ShuffleHandler whatever
     * it is given; this configuration keeps the ones set here.
     */
    private static final class PinnedAuxServices extends YarnConfiguration {
        private boolean pinned;

        @Override
        public void set(String name, String value, String source) {
            if (pinned && name.startsWith(YarnConfiguration.NM_AUX_SERVICES)) {
                return;
            }
            super.set(name, value, source);
        }
    }

    private static final String TASK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC";

    MapReduceCluster(Path work) throws IOException {
        rdmaPort = freePort();
        PinnedAuxServices conf = new PinnedAuxServices();
        conf.setStrings(YarnConfiguration.NM_AUX_SERVICES, ShuffleHandler.MAPREDUCE_SHUFFLE_SERVICEID);
        conf.set(String.format(YarnConfiguration.NM_AUX_SERVICE_FMT, ShuffleHandler.MAPREDUCE_SHUFFLE_SERVICEID),
                RdmaShuffleService.class.getName());
        conf.pinned = true;
        conf.setInt(HadoopSettings.SERVICE_PORT, rdmaPort);
        conf.set(HadoopSettings.SERVICE_BIND_ADDRESS, "127.0.0.1");
        conf.set(HadoopSettings.PREFIX + EngineConfig.KEY_PROVIDER, "software");
        conf.set(YarnConfiguration.RM_BIND_HOST, "127.0.0.1");
        conf.set(YarnConfiguration.NM_BIND_HOST, "127.0.0.1");
        conf.setInt(YarnConfiguration.NM_PMEM_MB, 4096);
        conf.setInt(YarnConfiguration.NM_VCORES, 8);
        conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 128);
        conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
        conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
        // What a test waits for, not what it tests: the RM's offers to the node, the AM's asks and the job
        // client's polls are a second or more each by default (the client's 5 s), several times a job.
        conf.setLong(YarnConfiguration.RM_NM_HEARTBEAT_INTERVAL_MS, 250);
        conf.setLong(YarnConfiguration.NM_PROCESS_KILL_WAIT_MS, 500);
        conf.setInt(MRJobConfig.MR_AM_TO_RM_HEARTBEAT_INTERVAL_MS, 250);
        conf.setInt(org.apache.hadoop.mapreduce.Job.COMPLETION_POLL_INTERVAL_KEY, 250);
        conf.setInt(org.apache.hadoop.mapreduce.Job.PROGRESS_MONITOR_POLL_INTERVAL_KEY, 250);
        conf.set("hadoop.tmp.dir", work.resolve("tmp").toString());
        conf.set(MRJobConfig.MR_AM_STAGING_DIR, work.resolve("staging").toString());
        yarn = new MiniMRYarnCluster("rdma-shuffle", 1);
        yarn.init(conf);
        yarn.start();
    }

    /** A job configuration for this cluster: small containers, the RDMA settings of the service. */
    JobConf jobConf() {
        JobConf job = new JobConf(yarn.getConfig());
        job.setInt(MRJobConfig.MR_AM_VMEM_MB, 512);
        // Short-lived JVMs on small data: C1 alone and the serial collector start and finish sooner.
        job.set(MRJobConfig.MR_AM_COMMAND_OPTS, "-Xmx320m " + TASK_JVM);
        job.setInt(MRJobConfig.MAP_MEMORY_MB, 384);
        job.setInt(MRJobConfig.REDUCE_MEMORY_MB, 512);
        job.set(MRJobConfig.MAP_JAVA_OPTS, "-Xmx256m " + TASK_JVM);
        job.set(MRJobConfig.REDUCE_JAVA_OPTS, "-Xmx384m --enable-native-access=ALL-UNNAMED " + TASK_JVM);
        job.setFloat(MRJobConfig.COMPLETED_MAPS_FOR_REDUCE_SLOWSTART, 1.0f);
        job.set(HadoopSettings.PREFIX + EngineConfig.KEY_BIND_ADDRESS, "127.0.0.1");
        return job;
    }

    /** The same job through the RDMA consumer; {@code fallback} off proves every block came over RDMA. */
    JobConf rdmaJobConf(boolean fallback) {
        JobConf job = jobConf();
        job.set(RdmaShuffleConsumerPlugin.CONSUMER_PLUGIN_KEY, RdmaShuffleConsumerPlugin.class.getName());
        job.setBoolean(HadoopSettings.MAPREDUCE_FALLBACK, fallback);
        return job;
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    @Override
    public void close() {
        yarn.stop();
    }

    Configuration config() {
        return yarn.getConfig();
    }
}
