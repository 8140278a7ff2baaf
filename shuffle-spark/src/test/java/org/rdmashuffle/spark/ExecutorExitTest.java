package org.rdmashuffle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.apache.spark.HashPartitioner;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.network.TransportContext;
import org.apache.spark.network.crypto.AuthServerBootstrap;
import org.apache.spark.network.sasl.SecretKeyHolder;
import org.apache.spark.network.server.TransportServer;
import org.apache.spark.network.shuffle.ExternalBlockHandler;
import org.apache.spark.network.util.MapConfigProvider;
import org.apache.spark.network.util.TransportConf;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.service.SparkShuffleServer;
import org.rdmashuffle.verbs.Verbs;
import scala.Tuple2;

/**
 * A node's shuffle service as YARN runs it, both halves in this JVM: Spark's external shuffle
 * service (executors register with it, so Spark keeps an exited executor's outputs) and the RDMA
 * {@link SparkShuffleServer} (reducers fetch from it). Two executors write a shuffle, one exits, and
 * the other reads the dead one's output by RDMA from the service: no map is re-run.
 */
class ExecutorExitTest {
    private static final String SECRET = "executor-exit-test-secret-0123456789";
    private static final int ROWS = 40_000;
    private static final int KEYS = 300;

    @TempDir
    Path scratch;

    @Test
    void executorExits_itsShuffleOutputIsStillFetchedFromTheService() throws Exception {
        Path local = Files.createDirectories(scratch.resolve("local"));
        TransportConf transport = new TransportConf("shuffle", new MapConfigProvider(Map.of()));
        EngineConfig engine = EngineConfig.defaults().set(EngineConfig.KEY_PROVIDER, "software")
                .set(EngineConfig.KEY_BIND_ADDRESS, "127.0.0.1").set(EngineConfig.KEY_RECEIVE_BUFFERS, "64")
                .set(EngineConfig.KEY_FETCH_BUFFER_MEMORY, "16m");
        ExternalBlockHandler handler = new ExternalBlockHandler(transport, null);
        try (TransportContext context = new TransportContext(transport, handler, true);
             TransportServer sparkService = context.createServer("127.0.0.1", 0, List.of(new AuthServerBootstrap(transport, ANY_APP)));
             SparkShuffleServer rdmaService = new SparkShuffleServer(engine,
                     app -> new org.rdmashuffle.core.server.files.Confinement(applicationDirs(local), null),
                     Verbs.choose("software").orElseThrow())) {
            SparkConf conf = serviceConf("executor exits", sparkService.getPort(), rdmaService.address().getPort(), false);
            try (JavaSparkContext sc = new JavaSparkContext(conf)) {
                rdmaService.applicationStarted(sc.sc().applicationId(), SECRET.getBytes(StandardCharsets.UTF_8));
                Tasks tasks = new Tasks();
                sc.sc().addSparkListener(tasks);
                SparkClusterSupport.awaitExecutors(sc, 2);

                JavaPairRDD<Integer, String> shuffled = pairs(sc).partitionBy(new HashPartitioner(4));
                Map<String, Integer> mapsByExecutor = runMapStage(sc, tasks, shuffled);
                String victim = busiest(mapsByExecutor);
                int victimMaps = mapsByExecutor.get(victim);
                assertEquals(0, rdmaService.outputsResolved(), "nothing is fetched before the reduce stage");
                kill(sc, tasks, victim);

                assertRightResult(shuffled);
                assertEquals(Map.of(), tasks.shuffleMapTasksByExecutor(), "map tasks re-run after the executor exited");
                assertEquals(victimMaps, rdmaService.outputsResolved(),
                        "outputs of the exited executor " + victim + " served by the service");
                long[] counts = rdmaFetchCounts(sc);
                assertTrue(counts[0] > 0, "blocks fetched over RDMA: " + counts[0]);
                assertEquals(0, counts[1], "blocks fetched over Spark's transport");
            }
        } finally {
            handler.close();
        }
    }

    /** Runs the map stage of {@code shuffled} alone; returns how many of its map tasks each executor ran. */
    private static Map<String, Integer> runMapStage(JavaSparkContext sc, Tasks tasks, JavaPairRDD<?, ?> shuffled)
            throws Exception {
        ShuffleDependency<?, ?, ?> dependency = (ShuffleDependency<?, ?, ?>) shuffled.rdd().dependencies().head();
        scala.concurrent.Await.result(sc.sc().submitMapStage(dependency), scala.concurrent.duration.Duration.Inf());
        return tasks.shuffleMapTasksByExecutor();
    }

    /** The executor that ran the most maps. */
    private static String busiest(Map<String, Integer> mapsByExecutor) {
        return mapsByExecutor.entrySet().stream().max(Map.Entry.comparingByValue()).orElseThrow().getKey();
    }

    /** Kills {@code victim}, waits until Spark has removed it, and forgets the tasks seen so far. */
    private static void kill(JavaSparkContext sc, Tasks tasks, String victim) throws InterruptedException {
        assertTrue(sc.sc().killExecutor(victim), "kill executor " + victim);
        assertTrue(tasks.removed(victim).await(60, TimeUnit.SECONDS), "executor " + victim + " did not exit");
        tasks.clear();
    }

    /** Spark's service stand-in accepts any application with {@link #SECRET} (on YARN, the one the NodeManager was handed). */
    private static final SecretKeyHolder ANY_APP = new SecretKeyHolder() {
        @Override
        public String getSaslUser(String appId) {
            return "sparkSaslUser";
        }

        @Override
        public String getSecretKey(String appId) {
            return SECRET;
        }
    };

    /** Executors registering with Spark's service at {@code sparkPort}, reducers fetching from the RDMA half at {@code rdmaPort}. */
    private SparkConf serviceConf(String name, int sparkPort, int rdmaPort, boolean fallback) throws java.io.IOException {
        return SparkClusterSupport.conf(name, true, scratch)
                .set("spark.authenticate", "true").set("spark.authenticate.secret", SECRET)
                .set("spark.shuffle.service.enabled", "true")
                .set("spark.shuffle.service.port", Integer.toString(sparkPort))
                .set(RdmaShuffleManager.SERVICE_ENABLED, "true")
                .set(RdmaShuffleManager.SERVICE_PORT, Integer.toString(rdmaPort))
                .set(RdmaShuffleManager.FALLBACK, Boolean.toString(fallback))
                // Both executors live on 127.0.0.1: without this they would read each other's files from disk.
                .set("spark.shuffle.readHostLocalDisk", "false");
    }

    /** Every row arrived, once, in the partition its key hashes to. */
    private static void assertRightResult(JavaPairRDD<Integer, String> shuffled) {
        List<long[]> perPartition = shuffled.mapPartitionsWithIndex((p, records) -> {
            long[] a = new long[3];
            while (records.hasNext()) {
                Tuple2<Integer, String> r = records.next();
                a[0]++;
                a[1] += r._2().hashCode();
                if (Math.floorMod(r._1().hashCode(), 4) != p) {
                    a[2]++; // a record in the wrong partition
                }
            }
            return List.of(a).iterator();
        }, false).collect();
        long[] total = new long[3];
        perPartition.forEach(a -> {
            total[0] += a[0];
            total[1] += a[1];
            total[2] += a[2];
        });
        assertEquals(ROWS, total[0], "rows after the shuffle");
        assertEquals(expectedHashSum(), total[1], "sum of the values' hashes");
        assertEquals(0, total[2], "rows in a partition their key does not hash to");
    }

    /**
     * Dynamic allocation's case without the RDMA service: Spark's external shuffle service on, the
     * RDMA service mode off, so executors serve their own outputs by RDMA. One exits after the map
     * stage; Spark keeps its outputs (its service has the files), and the reducer, finding the exited
     * executor's engine unreachable, fetches them over Spark's service: no map is re-run.
     */
    @Test
    void executorExits_withoutTheRdmaService_itsBlocksComeOverSparksService() throws Exception {
        TransportConf transport = new TransportConf("shuffle", new MapConfigProvider(Map.of()));
        ExternalBlockHandler handler = new ExternalBlockHandler(transport, null);
        try (TransportContext context = new TransportContext(transport, handler, true);
             TransportServer sparkService = context.createServer("127.0.0.1", 0, List.of(new AuthServerBootstrap(transport, ANY_APP)))) {
            SparkConf conf = serviceConf("executor exits, no rdma service", sparkService.getPort(), 0, true)
                    .remove(RdmaShuffleManager.SERVICE_ENABLED).remove(RdmaShuffleManager.SERVICE_PORT);
            try (JavaSparkContext sc = new JavaSparkContext(conf)) {
                Tasks tasks = new Tasks();
                sc.sc().addSparkListener(tasks);
                SparkClusterSupport.awaitExecutors(sc, 2);

                JavaPairRDD<Integer, String> shuffled = pairs(sc).partitionBy(new HashPartitioner(4));
                kill(sc, tasks, busiest(runMapStage(sc, tasks, shuffled)));

                assertRightResult(shuffled);
                assertEquals(Map.of(), tasks.shuffleMapTasksByExecutor(), "map tasks re-run after the executor exited");
                long[] counts = rdmaFetchCounts(sc);
                assertTrue(counts[1] > 0, "blocks of the exited executor fetched over Spark's service: " + counts[1]);
            }
        } finally {
            handler.close();
        }
    }

    @Test
    void theServicesRdmaHalfCannotBeReached_blocksComeFromSparksHalf_withFallback() throws Exception {
        TransportConf transport = new TransportConf("shuffle", new MapConfigProvider(Map.of()));
        ExternalBlockHandler handler = new ExternalBlockHandler(transport, null);
        int nobody;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            nobody = s.getLocalPort(); // closed again: nothing listens there
        }
        try (TransportContext context = new TransportContext(transport, handler, true);
             TransportServer sparkService = context.createServer("127.0.0.1", 0, List.of(new AuthServerBootstrap(transport, ANY_APP)));
             JavaSparkContext sc = new JavaSparkContext(serviceConf("rdma half down", sparkService.getPort(), nobody, true))) {
            Tasks tasks = new Tasks();
            sc.sc().addSparkListener(tasks);
            SparkClusterSupport.awaitExecutors(sc, 2);
            String meeting = scratch.resolve("maps-met").toString();
            JavaPairRDD<Integer, String> spread = pairs(sc).mapPartitionsToPair(rows -> {
                SparkClusterSupport.meetOnExecutors(meeting, 2); // outputs on both: some blocks are remote
                return rows;
            }, true);
            assertRightResult(spread.partitionBy(new HashPartitioner(4)));
            long[] counts = SparkClusterSupport.fetchCounts(sc);
            // What each executor says carried its shuffle and what each reduce task read, for a failure's
            // message (CI keeps only the message; this test once failed there with nothing counted anywhere).
            String carriers = String.join("\n", SparkClusterSupport.describeExecutors(sc)) + "\nreads:\n" + tasks.reads();
            assertEquals(0, counts[0], "blocks fetched over RDMA with nothing at the RDMA port:\n" + carriers);
            assertTrue(counts[1] > 0, "blocks fetched from Spark's half over TCP: " + counts[1] + "\n" + carriers);
        } finally {
            handler.close();
        }
    }

    /** What Spark's workers made of spark.local.dir: the directories holding the executors' blockmgr-* dirs. */
    private static Path real(Path p) {
        try {
            return p.toRealPath();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static List<Path> applicationDirs(Path local) {
        List<Path> dirs = new ArrayList<>();
        try (Stream<Path> all = Files.walk(local, 4)) {
            all.filter(p -> p.getFileName().toString().startsWith("blockmgr-") && Files.isDirectory(p))
                    .map(Path::getParent).distinct().forEach(d -> dirs.add(real(d)));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return dirs;
    }

    private static JavaPairRDD<Integer, String> pairs(JavaSparkContext sc) {
        return sc.parallelize(java.util.stream.IntStream.range(0, 6).boxed().toList(), 6).flatMapToPair(part -> {
            List<Tuple2<Integer, String>> out = new ArrayList<>();
            for (int i = part; i < ROWS; i += 6) {
                out.add(new Tuple2<>(Integer.hashCode(i * 31) % KEYS, "value-" + i));
            }
            return out.iterator();
        });
    }

    private static long expectedHashSum() {
        long s = 0;
        for (int i = 0; i < ROWS; i++) {
            s += ("value-" + i).hashCode();
        }
        return s;
    }

    /** Blocks the surviving executors fetched: {@code [over RDMA, over Spark's transport]}. */
    private static long[] rdmaFetchCounts(JavaSparkContext sc) {
        List<long[]> seen = sc.parallelize(List.of(1, 2, 3, 4), 4).map(i -> RdmaShuffleManager.fetchCounts()).collect();
        long[] max = new long[2];
        for (long[] c : seen) { // one executor is left: every task saw the same JVM's counts
            max[0] = Math.max(max[0], c[0]);
            max[1] = Math.max(max[1], c[1]);
        }
        return max;
    }

    /** Where each map task ran, and which executors were removed. */
    private static final class Tasks extends SparkListener {
        private final List<String> shuffleMapTasks = new CopyOnWriteArrayList<>();
        private final Map<String, CountDownLatch> removed = new ConcurrentHashMap<>();

        /** Each task that read a shuffle: where it ran, what it read remotely and locally, how it ended (for a failure's message). */
        private final List<String> reads = new CopyOnWriteArrayList<>();

        @Override
        public void onTaskEnd(SparkListenerTaskEnd e) {
            if (e.taskType().equals("ShuffleMapTask")) {
                shuffleMapTasks.add(e.taskInfo().executorId());
            }
            if (e.taskMetrics() != null && e.taskMetrics().shuffleReadMetrics().totalBlocksFetched() > 0) {
                var r = e.taskMetrics().shuffleReadMetrics();
                reads.add("stage " + e.stageId() + " task " + e.taskInfo().index() + " on executor " + e.taskInfo().executorId()
                        + ": " + r.remoteBlocksFetched() + " remote, " + r.localBlocksFetched() + " local blocks; " + e.reason());
            }
        }

        String reads() {
            return String.join("\n", reads);
        }

        @Override
        public void onExecutorRemoved(SparkListenerExecutorRemoved e) {
            removed(e.executorId()).countDown();
        }

        CountDownLatch removed(String executor) {
            return removed.computeIfAbsent(executor, x -> new CountDownLatch(1));
        }

        Map<String, Integer> shuffleMapTasksByExecutor() {
            Map<String, Integer> m = new java.util.TreeMap<>();
            shuffleMapTasks.forEach(x -> m.merge(x, 1, Integer::sum));
            return m;
        }

        void clear() {
            shuffleMapTasks.clear();
        }
    }
}
