package org.rdmashuffle.benchmarks.cluster;

import java.io.IOException;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Where a finished MapReduce job's time went, from MapReduce's JobHistoryServer ({@code
 * /ws/v1/history/mapreduce/jobs/<job>} and its {@code /tasks}): the job's own elapsed time (start to
 * finish, without the client's start or its polls), the map phase (first map task started to last map
 * task finished), the reduce phase (the same for the reduces; with {@code slowstart.completedmaps=1.0}
 * they start once every map is done), and the average reduce attempt's shuffle, merge and reduce times
 * as the history server computes them (shuffle: the attempt's start to the end of its fetches).
 */
record JobPhases(long elapsedMs, long mapPhaseMs, long reducePhaseMs, long avgShuffleMs, long avgMergeMs, long avgReduceMs) {
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * The phases of job {@code jobId}, asked of the cluster's history server; asked again for up to 30 s
     * while it does not know the job yet (it moves a finished job's history from the intermediate dir).
     */
    static JobPhases of(YarnCluster yarn, String jobId) throws IOException, InterruptedException {
        String base = "http://" + yarn.resourceManagerHost().address() + ":19888/ws/v1/history/mapreduce/jobs/" + jobId;
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                return parse(yarn.httpGet(base), yarn.httpGet(base + "/tasks"));
            } catch (IOException e) {
                if (System.nanoTime() > deadline) {
                    throw new IOException("the history server did not give " + jobId + "'s phases in 30 s", e);
                }
                Thread.sleep(2000);
            }
        }
    }

    /** From the history server's answers about the job and about its tasks. */
    static JobPhases parse(String jobJson, String tasksJson) throws IOException {
        JsonNode job = JSON.readTree(jobJson).path("job");
        if (!job.has("startTime") || !job.has("finishTime")) {
            throw new IOException("the history server's answer has no job start and finish: " + jobJson);
        }
        long[] maps = {Long.MAX_VALUE, Long.MIN_VALUE};
        long[] reduces = {Long.MAX_VALUE, Long.MIN_VALUE};
        for (JsonNode task : JSON.readTree(tasksJson).path("tasks").path("task")) {
            long[] window = switch (task.path("type").asText()) {
                case "MAP" -> maps;
                case "REDUCE" -> reduces;
                default -> throw new IOException("a task of unknown type in the history server's answer: " + task);
            };
            window[0] = Math.min(window[0], task.path("startTime").asLong());
            window[1] = Math.max(window[1], task.path("finishTime").asLong());
        }
        return new JobPhases(job.path("finishTime").asLong() - job.path("startTime").asLong(), span(maps), span(reduces),
                job.path("avgShuffleTime").asLong(), job.path("avgMergeTime").asLong(), job.path("avgReduceTime").asLong());
    }

    private static long span(long[] window) {
        return window[0] <= window[1] ? window[1] - window[0] : 0;
    }
}
