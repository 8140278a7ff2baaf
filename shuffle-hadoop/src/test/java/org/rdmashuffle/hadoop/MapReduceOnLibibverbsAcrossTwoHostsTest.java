package org.rdmashuffle.hadoop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Counters;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.TaskCounter;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.jobhistory.JobHistoryParser;
import org.apache.hadoop.mapreduce.jobhistory.JobHistoryParser.JobInfo;
import org.apache.hadoop.mapreduce.jobhistory.JobHistoryParser.TaskAttemptInfo;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.KeyValueTextInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.TextOutputFormat;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.nodemanager.NodeManager;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * A MapReduce job across the two Soft-RoCE guests of {@code guest-tests.sh --pair}, on the real
 * libibverbs: host 1 runs the ResourceManager and a NodeManager ({@link TwoHostYarn#main}, started by
 * pair-tests.sh), this test submits a sort from host 0 and runs host 0's NodeManager in its own JVM.
 * The application master and both maps run on host 1, the reduce on host 0 ({@link TwoHostYarn} says
 * why), so the reduce reads every map output across the wire from host 1's {@link RdmaShuffleService},
 * with fallback off: a block that did not come over RDMA fails the job.
 *
 * <p>Checked: the sorted output is exactly the input sorted by key (computed here), the job's
 * counters say every shuffled map output and byte came over RDMA, the history says where each task
 * ran, and the reduce's log names the engine it fetched with (ibverbs on rxe0 at this host's address).
 * Needs {@code rdmashuffle.test.sharedDir} (a directory both hosts mount at one path) and
 * {@code rdmashuffle.test.bindAddress} (this host's address on the wire); skipped without them.
 */
class MapReduceOnLibibverbsAcrossTwoHostsTest {
    private static final int ROWS_PER_FILE = 10_000;
    private static final int MAPS = 2; // one per input file
    private static final long JOB_MINUTES = 20;

    @Test
    void aReduceOnOneHost_readsEveryMapOutputOfTheOtherHostsNodeManager_overLibibverbs() throws Exception {
        String sharedDir = System.getProperty("rdmashuffle.test.sharedDir");
        String address = System.getProperty("rdmashuffle.test.bindAddress");
        Assumptions.assumeTrue(sharedDir != null && address != null,
                "needs the ResourceManager on another host with an rxe device: run softroce/guest-tests.sh --pair");
        Path shared = Path.of(sharedDir);
        TwoHostYarn.logTo(shared.resolve("yarn-" + TwoHostYarn.HOST0 + ".log"));
        YarnConfiguration conf = TwoHostYarn.configuration(0, shared);
        byte[] expected = writeInput(shared.resolve("input"));
        Path output = shared.resolve("output");

        Job job = Job.getInstance(conf, "rdma-shuffle sort across two hosts");
        job.setJarByClass(MapReduceOnLibibverbsAcrossTwoHostsTest.class);
        job.setInputFormatClass(KeyValueTextInputFormat.class);
        job.setOutputFormatClass(TextOutputFormat.class);
        job.setOutputKeyClass(Text.class);
        job.setOutputValueClass(Text.class);
        job.setNumReduceTasks(1);
        FileInputFormat.addInputPath(job, new org.apache.hadoop.fs.Path(shared.resolve("input").toUri()));
        FileOutputFormat.setOutputPath(job, new org.apache.hadoop.fs.Path(output.toUri()));
        job.submit();
        // Host 0's node starts while host 1 starts the application master: the reduce needs it later.
        NodeManager node = new NodeManager();
        try {
            node.init(conf); // the job took its own copy at getInstance
            node.start();
            awaitCompletion(job);
            JobInfo history = history(shared, job.getJobID().toString());
            assertEquals("SUCCEEDED", history.getJobStatus(), "the job: " + history.getErrorInfo());

            assertArrayEquals(expected, Files.readAllBytes(output.resolve("part-r-00000")), "the sorted output");

            Map<String, List<String>> hosts = hostsByTaskType(history);
            assertEquals(Map.of("MAP", List.of(TwoHostYarn.HOST1, TwoHostYarn.HOST1), "REDUCE", List.of(TwoHostYarn.HOST0)),
                    hosts, "where the successful attempts ran");

            Counters counters = history.getTotalCounters();
            long shuffled = counters.findCounter(TaskCounter.SHUFFLED_MAPS).getValue();
            long bytes = counters.findCounter(TaskCounter.REDUCE_SHUFFLE_BYTES).getValue();
            assertEquals(MAPS, shuffled, "shuffled map outputs");
            assertEquals(shuffled, counters.findCounter(RdmaShuffleCounter.MAP_OUTPUTS_OVER_RDMA).getValue(),
                    "map outputs over RDMA");
            assertTrue(bytes > 0, "reduce shuffle bytes " + bytes);
            assertEquals(bytes, counters.findCounter(RdmaShuffleCounter.BYTES_OVER_RDMA).getValue(),
                    "bytes over RDMA vs reduce shuffle bytes");

            String carrier = reduceCarrier();
            assertTrue(carrier.contains("fetches with the engine: RDMA over software device rxe0 (rxe: RoCE done by the kernel, no RDMA NIC) "
                    + "(provider ibverbs, control " + address + ")"),
                    carrier);
            System.out.printf("MapReduce across two hosts: %d maps on %s, the reduce on %s read %d map outputs "
                    + "(%d bytes) over RDMA; %s%n", MAPS, TwoHostYarn.HOST1, TwoHostYarn.HOST0, shuffled, bytes, carrier);
        } finally {
            if (!job.isComplete()) {
                job.killJob();
            }
            node.stop();
        }
    }

    /**
     * Two files of tab-separated rows with distinct keys (an odd multiplier permutes 32-bit numbers);
     * returns what the sort must print: every row, ordered by key.
     */
    private static byte[] writeInput(Path dir) throws IOException {
        Files.createDirectories(dir);
        TreeMap<String, String> sorted = new TreeMap<>();
        for (int f = 0; f < MAPS; f++) {
            try (BufferedWriter w = Files.newBufferedWriter(dir.resolve("rows-" + f + ".txt"), StandardCharsets.US_ASCII)) {
                for (int i = f * ROWS_PER_FILE; i < (f + 1) * ROWS_PER_FILE; i++) {
                    String key = String.format("%08x", (i * 2654435761L) & 0xffffffffL);
                    String value = "row-" + i;
                    w.write(key + '\t' + value + '\n');
                    sorted.put(key, value);
                }
            }
        }
        StringBuilder out = new StringBuilder();
        sorted.forEach((k, v) -> out.append(k).append('\t').append(v).append('\n'));
        return out.toString().getBytes(StandardCharsets.US_ASCII);
    }

    private static void awaitCompletion(Job job) throws Exception {
        long start = System.nanoTime();
        long deadline = start + TimeUnit.MINUTES.toNanos(JOB_MINUTES);
        String last = "";
        while (!job.isComplete()) {
            String now = progress(job);
            if (!now.equals(last)) { // the emulated CPU is slow: say where the job is as it moves
                System.out.printf("%4d s: %s%n", TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start), now);
                last = now;
            }
            if (System.nanoTime() > deadline) {
                fail("the job did not finish in " + JOB_MINUTES + " minutes: " + now);
            }
            Thread.sleep(2000);
        }
        System.out.printf("%4d s: the job is complete%n", TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start));
    }

    private static String progress(Job job) throws Exception {
        org.apache.hadoop.mapreduce.JobStatus s = job.getStatus();
        StringBuilder b = new StringBuilder(s.getState() + String.format(" map %.0f%% reduce %.0f%%",
                s.getMapProgress() * 100, s.getReduceProgress() * 100));
        for (TaskType type : new TaskType[] {TaskType.MAP, TaskType.REDUCE}) {
            for (org.apache.hadoop.mapreduce.TaskReport r : job.getTaskReports(type)) {
                b.append("; ").append(r.getTaskID().getTaskType()).append(r.getTaskID().getId()).append(' ')
                        .append(r.getCurrentStatus());
                for (String d : r.getDiagnostics()) {
                    b.append(" [").append(d.lines().findFirst().orElse("")).append(']');
                }
            }
        }
        return b.toString();
    }

    /** The job's history as its application master wrote it (there is no history server to ask). */
    private static JobInfo history(Path shared, String jobId) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        while (true) {
            try (Stream<Path> files = Files.walk(shared.resolve("staging"))) {
                Path jhist = files.filter(p -> p.toString().contains("done_intermediate"))
                        .filter(p -> p.getFileName().toString().startsWith(jobId) && p.toString().endsWith(".jhist"))
                        .findFirst().orElse(null);
                if (jhist != null) {
                    return new JobHistoryParser(FileSystem.getLocal(new org.apache.hadoop.conf.Configuration()),
                            jhist.toString()).parse();
                }
            }
            if (System.nanoTime() > deadline) {
                fail("no history file for " + jobId + " under " + shared.resolve("staging"));
            }
            Thread.sleep(1000);
        }
    }

    /** The host of each task's successful attempt, by task type. */
    private static Map<String, List<String>> hostsByTaskType(JobInfo history) {
        Map<String, List<String>> hosts = new TreeMap<>();
        history.getAllTasks().values().forEach(task -> {
            TaskAttemptInfo a = task.getAllTaskAttempts().get(task.getSuccessfulAttemptId());
            if (a != null && (a.getTaskType() == TaskType.MAP || a.getTaskType() == TaskType.REDUCE)) {
                hosts.computeIfAbsent(a.getTaskType().name(), t -> new ArrayList<>()).add(a.getHostname());
            }
        });
        return hosts;
    }

    /** The reduce's own line about what carried its shuffle, from its log on this host. */
    private static String reduceCarrier() throws IOException {
        try (Stream<Path> files = Files.walk(TwoHostYarn.logDir(0))) {
            return files.filter(Files::isRegularFile).flatMap(p -> {
                try {
                    return Files.readAllLines(p, StandardCharsets.ISO_8859_1).stream(); // logs may hold any byte
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }).filter(l -> l.contains("fetches with the engine: ")).findFirst()
                    .orElse("no line about the RDMA engine in the reduce's logs under " + TwoHostYarn.logDir(0));
        }
    }
}
