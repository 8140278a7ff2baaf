package org.rdmashuffle.hadoop;

import org.apache.hadoop.mapreduce.JobID;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskID;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.yarn.api.records.ApplicationId;

/**
 * MapReduce's names in the engine's terms. A job is one shuffle (id {@link #SHUFFLE}) of the YARN
 * application that runs it, and a map attempt is a map id: task index in the high 32 bits, attempt
 * number in the low — so a re-run map is a different output, as it is on disk.
 */
final class MapReduceIds {
    /** The one shuffle of a MapReduce job. */
    static final int SHUFFLE = 0;

    private MapReduceIds() {
    }

    static long mapId(TaskAttemptID attempt) {
        if (attempt.getTaskType() != TaskType.MAP) {
            throw new IllegalArgumentException(attempt + " is not a map attempt");
        }
        return ((long) attempt.getTaskID().getId() << 32) | (attempt.getId() & 0xffff_ffffL);
    }

    /** The map attempt of {@code job} that {@code mapId} names; fails on ids no map attempt has. */
    static TaskAttemptID mapAttempt(JobID job, long mapId) {
        int task = (int) (mapId >>> 32);
        int attempt = (int) mapId;
        if (task < 0 || attempt < 0) {
            throw new IllegalArgumentException("map id " + mapId + " names no map attempt");
        }
        return new TaskAttemptID(new TaskID(job, TaskType.MAP, task), attempt);
    }

    /** The YARN application that runs {@code job} (as MapReduce's TypeConverter maps them). */
    static String applicationOf(JobID job) {
        return ApplicationId.newInstance(Long.parseLong(job.getJtIdentifier()), job.getId()).toString();
    }

    /**
     * The engine's shared secret for a job: SHA-256 over the job's shuffle secret. MapReduce's shuffle
     * secret is 64 bits by default ({@code mapreduce.shuffle-key-length}), shorter than the engine
     * accepts; hashing it keeps its strength (that of the stock HTTP shuffle) and gives both sides the
     * same key without sending it.
     */
    static byte[] engineSecret(byte[] jobShuffleSecret) {
        try {
            java.security.MessageDigest sha = java.security.MessageDigest.getInstance("SHA-256");
            sha.update("rdma-shuffle mapreduce job secret:".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            return sha.digest(jobShuffleSecret);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every JDK", e);
        }
    }

    /** The job a MapReduce application runs; fails on a string that is no application id. */
    static JobID jobOf(String applicationId) {
        ApplicationId app = ApplicationId.fromString(applicationId);
        return new JobID(Long.toString(app.getClusterTimestamp()), app.getId());
    }
}
