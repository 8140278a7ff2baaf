package org.rdmashuffle.hadoop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.MROutputFiles;
import org.apache.hadoop.mapred.MapOutputFile;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobCounter;
import org.apache.hadoop.mapreduce.JobStatus;
import org.apache.hadoop.mapreduce.OutputCommitter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskCounter;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.KeyValueTextInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputCommitter;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.TextOutputFormat;
import org.apache.hadoop.metrics2.impl.MetricsCollectorImpl;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.util.ReflectionUtils;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * MapReduce jobs on a YARN cluster whose NodeManager runs {@link RdmaShuffleService}, reducers
 * shuffling with {@link RdmaShuffleConsumerPlugin}: the sorted output equals the stock shuffle's, a
 * lost map output is re-run, an unreachable service and an output it will not serve fall back to HTTP,
 * blocks larger than the reducer's fetch buffers come over RDMA in pieces, and a reducer without the
 * job's secret reads nothing.
 */
class MapReduceOverRdmaTest {
    private static final int ROWS = 1_000_000;
    private static final int MAPS = 4;
    private static final int REDUCES = 2;
    private static final String TAMPER = "rdmashuffle.test.tamper";

    @TempDir
    static Path work;
    private static MapReduceCluster cluster;
    private static Path input;
    private static Outcome stock;

    /**
     * @param engineMaps map outputs the engine read over the software provider (this cluster's: no device here)
     * @param rdmaMaps map outputs counted as read over RDMA (a verbs device): none may be, on the software provider
     */
    private record Outcome(List<byte[]> parts, long shuffledMaps, long shuffleBytes, long failedMaps, long engineMaps,
                           long engineBytes, long rdmaMaps, long rdmaBytes) {
    }

    @BeforeAll
    static void startCluster() throws Exception {
        cluster = new MapReduceCluster(work);
        input = writeInput(work.resolve("input"));
        stock = sort("stock", cluster.jobConf());
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void sortedOutput_isIdenticalToTheStockShuffles_withTheSameShuffleCounters() throws Exception {
        long resolvedBefore = servedMapOutputs();
        Outcome rdma = sort("rdma", cluster.rdmaJobConf(false));
        assertSameOutput(stock, rdma);
        assertEquals((long) MAPS * REDUCES, rdma.shuffledMaps, "shuffled maps");
        assertEquals(stock.shuffledMaps, rdma.shuffledMaps, "shuffled maps, stock vs rdma");
        assertEquals(stock.shuffleBytes, rdma.shuffleBytes, "reduce shuffle bytes, stock vs rdma");
        assertEquals(rdma.shuffledMaps, rdma.engineMaps, "map outputs over the software provider (job counter)");
        assertEquals(rdma.shuffleBytes, rdma.engineBytes, "bytes over the software provider (job counter) vs reduce shuffle bytes");
        assertEquals(0, rdma.rdmaMaps, "map outputs counted as over RDMA, on the software provider");
        assertEquals(0, rdma.rdmaBytes, "bytes counted as over RDMA, on the software provider");
        assertEquals(0, stock.engineMaps + stock.rdmaMaps, "map outputs over the engine in the stock shuffle's job");
        assertEquals(MAPS, servedMapOutputs() - resolvedBefore, "map outputs the service found and registered");
        // The NodeManager stops the application once the job is done: its regions are deregistered.
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
        while (serviceMetric("RegisteredMapOutputBytes") != 0 && System.nanoTime() < deadline) {
            Thread.sleep(200);
        }
        assertEquals(0, serviceMetric("RegisteredMapOutputBytes"), "registered bytes after the application stopped");
    }

    @Test
    void aLostMapOutput_getsItsMapReRun_andTheOutputIsStillRight() throws Exception {
        JobConf conf = cluster.rdmaJobConf(false);
        conf.set(TAMPER, Tamper.LOSE_FIRST_ATTEMPT.name());
        // The application master runs the map again on the second report of its lost output, not the third
        // (MapReduce's default), which waits for a reducer's next try after its host's penalty (10 s,
        // growing): measured, the map ran again 12 s after the first refusal instead of 17 and the job ended
        // 17 s after it instead of 32. The same reducers read the new output, as before (no reduce re-run).
        conf.setInt(org.apache.hadoop.mapreduce.MRJobConfig.MAX_FETCH_FAILURES_NOTIFICATIONS, REDUCES);
        Outcome rdma = sort("lost-output", conf);
        assertSameOutput(stock, rdma);
        assertTrue(rdma.failedMaps >= 1, "the map whose output was lost ran again: failed maps " + rdma.failedMaps);
    }

    /**
     * A map whose local dir fills while it merges its output (issue 52, item 5): map 0's first attempt
     * writes its output where the NodeManager's service looks for it ({@code
     * usercache/<user>/appcache/<app>/output/<attempt>/} in one of the node's local dirs), made here a
     * full tmpfs in each. The attempt fails on
     * {@code ENOSPC} (MapReduce's own {@code FSError}: the task says why), MapReduce runs it again
     * elsewhere on the disk, and every reducer reads the second attempt's output over RDMA (fallback
     * off); the service found the four committed outputs and nothing of the failed one.
     */
    @Test
    void aMapWhoseLocalDirIsFull_failsNamingNoSpace_isRunAgain_andEveryOutputComesOverRdma() throws Exception {
        org.rdmashuffle.core.testing.SmallFilesystem.requireMountable(); // before the job starts
        JobConf conf = cluster.rdmaJobConf(false);
        conf.setInt(org.apache.hadoop.mapreduce.MRJobConfig.IO_SORT_MB, 1); // several spills: the final merge writes file.out
        long resolvedBefore = servedMapOutputs();
        Job job = sortJob("local-dir-full", conf);
        job.setMapperClass(WaitsForItsFullDisk.class);
        job.submit();
        String app = job.getJobID().toString().replace("job_", "application_");
        TaskAttemptID first = new TaskAttemptID(new org.apache.hadoop.mapreduce.TaskID(job.getJobID(), TaskType.MAP, 0), 0);
        String[] localDirs = cluster.yarn.getNodeManager(0).getConfig().getTrimmedStrings(
                org.apache.hadoop.yarn.conf.YarnConfiguration.NM_LOCAL_DIRS);
        List<Path> appDirs = java.util.Arrays.stream(localDirs)
                .map(d -> Path.of(d, "usercache", System.getProperty("user.name"), "appcache", app)).toList();
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
        while (!appDirs.stream().allMatch(Files::isDirectory)) { // made as the application master's container starts
            assertTrue(System.nanoTime() < deadline, appDirs + " did not appear in a minute");
            Thread.sleep(20);
        }
        // The attempt merges into the local dir its spills went to, whichever: each is full for it.
        List<org.rdmashuffle.core.testing.SmallFilesystem> disks = new java.util.ArrayList<>();
        String diagnostics;
        try {
            for (Path appDir : appDirs) {
                disks.add(org.rdmashuffle.core.testing.SmallFilesystem.mount(appDir.resolve("output").resolve(first.toString()),
                        1L << 20));
                disks.getLast().fillLeaving(64 << 10);
            }
            diagnostics = awaitFailure(job, first);
        } finally { // unmounted once the attempt failed: what it left there goes with the tmpfs
            for (var disk : disks) {
                disk.close();
            }
        }
        assertTrue(job.waitForCompletion(false), "the job failed: " + job.getStatus().getFailureInfo());
        assertTrue(diagnostics.contains("No space left on device"), "why map 0's first attempt failed: " + diagnostics);
        Outcome rdma = outcome("local-dir-full", job);
        assertSameOutput(stock, rdma);
        assertTrue(rdma.failedMaps >= 1, "failed maps: " + rdma.failedMaps);
        assertEquals(rdma.shuffledMaps, rdma.engineMaps, "map outputs over the software provider (job counter)");
        assertEquals(rdma.shuffleBytes, rdma.engineBytes, "bytes over the software provider (job counter)");
        assertEquals(0, rdma.rdmaMaps + rdma.rdmaBytes, "counted as over RDMA, on the software provider");
        assertEquals(MAPS, servedMapOutputs() - resolvedBefore, "map outputs the service found: the committed ones");
    }

    /** Waits (at most 2 minutes) for {@code attempt} to fail; returns what the task said. */
    private static String awaitFailure(Job job, TaskAttemptID attempt) throws Exception {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(120);
        while (System.nanoTime() < deadline && !job.isComplete()) {
            for (var e : job.getTaskCompletionEvents(0, 100)) {
                if (e.getTaskAttemptId().toString().equals(attempt.toString()) && e.getStatus() != org.apache.hadoop.mapreduce.TaskCompletionEvent.Status.SUCCEEDED) {
                    return String.join("\n", job.getTaskDiagnostics(attempt));
                }
            }
            Thread.sleep(100);
        }
        throw new AssertionError(attempt + " did not fail in time; the job " + (job.isComplete() ? "completed" : "runs"));
    }

    /**
     * The identity map, whose first attempt of map 0 starts only once the test has mounted and filled
     * the disks its output may go to (the filler is there), so it cannot write before they are full.
     */
    public static final class WaitsForItsFullDisk extends org.apache.hadoop.mapreduce.Mapper<Text, Text, Text, Text> {
        @Override
        protected void setup(Context context) throws IOException, InterruptedException {
            TaskAttemptID id = context.getTaskAttemptID();
            if (id.getTaskID().getId() != 0 || id.getId() != 0) {
                return;
            }
            String[] dirs = context.getConfiguration().getTrimmedStrings(org.apache.hadoop.mapreduce.MRConfig.LOCAL_DIR);
            long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
            while (!java.util.Arrays.stream(dirs).allMatch(d -> org.rdmashuffle.core.testing.SmallFilesystem.isFull(
                    Path.of(d, "output", id.toString())))) {
                if (System.nanoTime() > deadline) {
                    throw new IOException("the test did not fill " + java.util.Arrays.toString(dirs) + "/output/" + id + " in a minute");
                }
                Thread.sleep(20);
            }
        }
    }

    @Test
    void aNodeWhoseServiceCannotBeReached_isFetchedOverHttp_withFallback() throws Exception {
        JobConf conf = cluster.rdmaJobConf(true);
        conf.setInt(HadoopSettings.SERVICE_PORT, MapReduceCluster.freePort()); // nothing listens there
        Outcome fallback = sort("fallback", conf);
        assertSameOutput(stock, fallback);
    }

    @Test
    void anOutputTheServiceWillNotDescribe_isFetchedOverHttp_withFallback() throws Exception {
        JobConf conf = cluster.rdmaJobConf(true);
        conf.set(TAMPER, Tamper.GROW.name());
        long resolvedBefore = servedMapOutputs();
        Outcome mixed = sort("refused-output", conf);
        assertSameOutput(stock, mixed);
        assertEquals(0, mixed.failedMaps, "nothing was re-run: the refused output came over HTTP");
        assertEquals(MAPS - 1, servedMapOutputs() - resolvedBefore, "all other outputs were served by RDMA");
        assertEquals((long) (MAPS - 1) * REDUCES, mixed.engineMaps, "map outputs over the software provider (job counter)");
        assertTrue(mixed.engineBytes > 0 && mixed.engineBytes < mixed.shuffleBytes, "bytes over the software provider: "
                + mixed.engineBytes + " of " + mixed.shuffleBytes);
        assertEquals(0, mixed.rdmaMaps + mixed.rdmaBytes, "counted as over RDMA, on the software provider");
    }

    /** Before, such blocks failed as too large and went over HTTP; now they come over RDMA in pieces, fallback off. */
    @Test
    void blocksLargerThanTheReducersFetchBuffers_comeOverRdmaInPieces() throws Exception {
        long perBlock = stock.shuffleBytes / ((long) MAPS * REDUCES);
        assertTrue(perBlock > 3 << 19, "this test needs blocks well above 1 MiB, not " + perBlock + " bytes");
        JobConf conf = cluster.rdmaJobConf(false);
        conf.set(HadoopSettings.PREFIX + org.rdmashuffle.core.config.EngineConfig.KEY_FETCH_BUFFER_MEMORY, "1m");
        Outcome big = sort("larger-than-buffers", conf);
        assertSameOutput(stock, big);
        assertEquals(0, big.failedMaps, "nothing was re-run");
        assertEquals(stock.shuffleBytes, big.shuffleBytes, "reduce shuffle bytes, stock vs rdma");
        assertEquals(big.shuffledMaps, big.engineMaps, "map outputs over the software provider (job counter)");
        assertEquals(big.shuffleBytes, big.engineBytes, "bytes over the software provider (job counter)");
    }

    @Test
    void aReducerWithoutTheJobsSecret_isRefused() throws Exception {
        TaskAttemptID someMap = MapReduceIds.mapAttempt(MapReduceIds.jobOf("application_1_0001"), 0);
        try (TestReducer stranger = new TestReducer("application_1_0001",
                MapReduceIds.engineSecret("guessed".getBytes(StandardCharsets.UTF_8)))) {
            TestReducer.Result got = stranger.fetch(new java.net.InetSocketAddress("127.0.0.1", cluster.rdmaPort), someMap, 0);
            assertTrue(got.refused(), String.valueOf(got.failure()));
        }
    }

    // ------------------------------------------------------------------ the job

    private static Path writeInput(Path dir) throws IOException {
        Files.createDirectories(dir);
        Random random = new Random(42);
        try (BufferedWriter w = Files.newBufferedWriter(dir.resolve("rows.txt"), StandardCharsets.US_ASCII)) {
            char[] key = new char[12];
            for (int i = 0; i < ROWS; i++) {
                for (int k = 0; k < key.length; k++) {
                    key[k] = (char) ('a' + random.nextInt(26));
                }
                w.write(key);
                w.write('\t');
                w.write(Integer.toString(i));
                w.write('\n');
            }
        }
        return dir;
    }

    /** Sorts the input by key with identity map and reduce; returns the reduce outputs and counters. */
    private static Outcome sort(String name, JobConf conf) throws Exception {
        Job job = sortJob(name, conf);
        assertTrue(job.waitForCompletion(false), name + " job failed: " + job.getStatus().getFailureInfo());
        return outcome(name, job);
    }

    /** The sort job, not yet submitted. */
    private static Job sortJob(String name, JobConf conf) throws IOException {
        Path out = work.resolve("output-" + name);
        long split = Files.size(input.resolve("rows.txt")) / MAPS + 1;
        conf.setLong(FileInputFormat.SPLIT_MAXSIZE, split);
        conf.setLong(FileInputFormat.SPLIT_MINSIZE, split);
        Job job = Job.getInstance(conf, "rdma-shuffle sort " + name);
        job.setJarByClass(MapReduceOverRdmaTest.class);
        job.setInputFormatClass(KeyValueTextInputFormat.class);
        job.setOutputFormatClass(conf.get(TAMPER) == null ? TextOutputFormat.class : TamperingOutputFormat.class);
        job.setOutputKeyClass(Text.class);
        job.setOutputValueClass(Text.class);
        job.setNumReduceTasks(REDUCES);
        FileInputFormat.addInputPath(job, new org.apache.hadoop.fs.Path(input.toUri()));
        FileOutputFormat.setOutputPath(job, new org.apache.hadoop.fs.Path(out.toUri()));
        return job;
    }

    /** A finished sort job's reduce outputs and counters. */
    private static Outcome outcome(String name, Job job) throws Exception {
        Path out = work.resolve("output-" + name);
        assertEquals(JobStatus.State.SUCCEEDED, job.getJobState(), name + ": " + job.getStatus().getFailureInfo());
        List<byte[]> parts = new java.util.ArrayList<>();
        for (int r = 0; r < REDUCES; r++) {
            parts.add(Files.readAllBytes(out.resolve(String.format("part-r-%05d", r))));
        }
        var counters = job.getCounters();
        return new Outcome(parts, counters.findCounter(TaskCounter.SHUFFLED_MAPS).getValue(),
                counters.findCounter(TaskCounter.REDUCE_SHUFFLE_BYTES).getValue(),
                counters.findCounter(JobCounter.NUM_FAILED_MAPS).getValue(),
                counters.findCounter(RdmaShuffleCounter.MAP_OUTPUTS_OVER_SOFTWARE_PROVIDER).getValue(),
                counters.findCounter(RdmaShuffleCounter.BYTES_OVER_SOFTWARE_PROVIDER).getValue(),
                counters.findCounter(RdmaShuffleCounter.MAP_OUTPUTS_OVER_RDMA).getValue(),
                counters.findCounter(RdmaShuffleCounter.BYTES_OVER_RDMA).getValue());
    }

    private static void assertSameOutput(Outcome expected, Outcome actual) {
        long rows = 0;
        for (int r = 0; r < REDUCES; r++) {
            assertArrayEquals(expected.parts.get(r), actual.parts.get(r), "part-r-" + r);
            for (byte b : actual.parts.get(r)) {
                rows += b == '\n' ? 1 : 0;
            }
        }
        assertEquals(ROWS, rows, "rows out");
    }

    /** Map outputs the NodeManager's service found on disk. */
    private static long servedMapOutputs() {
        return serviceMetric("MapOutputsResolved");
    }

    /** A metric of the NodeManager's service, from its metrics2 source. */
    private static long serviceMetric(String name) {
        MetricsCollectorImpl collector = new MetricsCollectorImpl();
        DefaultMetricsSystem.instance().getSource(RdmaShuffleService.METRICS_SOURCE).getMetrics(collector, true);
        for (var m : collector.getRecords().get(0).metrics()) {
            if (m.name().equals(name)) {
                return m.value().longValue();
            }
        }
        throw new AssertionError("no metric " + name);
    }

    /** What a job's committer does to map 0's output as the map commits (the map has succeeded by then). */
    enum Tamper {
        /** Deletes the first attempt's output file: a disk lost after the map ran. */
        LOSE_FIRST_ATTEMPT,
        /** Appends a byte: the file no longer matches its index, which the service checks and HTTP does not. */
        GROW
    }

    /** TextOutputFormat whose committer tampers with map 0's output as {@link #TAMPER} says. */
    public static final class TamperingOutputFormat extends TextOutputFormat<Text, Text> {
        private TamperingCommitter committer;

        @Override
        public synchronized OutputCommitter getOutputCommitter(TaskAttemptContext context) throws IOException {
            if (committer == null) {
                committer = new TamperingCommitter(getOutputPath(context), context);
            }
            return committer;
        }
    }

    static final class TamperingCommitter extends FileOutputCommitter {
        TamperingCommitter(org.apache.hadoop.fs.Path output, TaskAttemptContext context) throws IOException {
            super(output, context);
        }

        private static Tamper tamper(TaskAttemptContext c) {
            boolean firstMap = c.getTaskAttemptID().getTaskType() == TaskType.MAP
                    && c.getTaskAttemptID().getTaskID().getId() == 0;
            Tamper t = Tamper.valueOf(c.getConfiguration().get(TAMPER));
            return !firstMap || (t == Tamper.LOSE_FIRST_ATTEMPT && c.getTaskAttemptID().getId() != 0) ? null : t;
        }

        @Override
        public boolean needsTaskCommit(TaskAttemptContext c) throws IOException {
            return tamper(c) != null || super.needsTaskCommit(c);
        }

        @Override
        public void commitTask(TaskAttemptContext c) throws IOException {
            Tamper t = tamper(c);
            if (t != null) {
                Configuration conf = c.getConfiguration();
                MapOutputFile files = ReflectionUtils.newInstance(conf.getClass(
                        org.apache.hadoop.mapreduce.MRConfig.TASK_LOCAL_OUTPUT_CLASS, MROutputFiles.class,
                        MapOutputFile.class), conf);
                Path output = Path.of(files.getOutputFile().toUri().getPath());
                switch (t) {
                    case LOSE_FIRST_ATTEMPT -> Files.delete(output);
                    case GROW -> Files.write(output, new byte[] {0}, java.nio.file.StandardOpenOption.APPEND);
                }
            }
            if (super.needsTaskCommit(c)) {
                super.commitTask(c);
            }
        }
    }
}
