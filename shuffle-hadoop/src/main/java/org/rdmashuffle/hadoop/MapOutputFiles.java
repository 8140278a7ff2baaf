package org.rdmashuffle.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.util.function.Function;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapred.IndexRecord;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.SpillRecord;
import org.apache.hadoop.mapreduce.JobID;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.yarn.server.api.AuxiliaryLocalPathHandler;
import org.rdmashuffle.core.server.MapOutputRegistry;

/**
 * Finds a MapReduce map output where the map task left it, as the stock ShuffleHandler does:
 * {@code usercache/<user>/appcache/<application>/output/<attempt>/file.out} and its
 * {@code file.out.index} under one of the NodeManager's local dirs. The index (checksummed, owner
 * checked when security is on) gives each reduce partition's offset, stored length and raw length;
 * partitions must lie end to end from offset 0, as the map's final merge writes them.
 */
final class MapOutputFiles implements MapOutputRegistry.Resolver {
    private static final System.Logger LOG = System.getLogger(MapOutputFiles.class.getName());

    private final JobConf conf;
    private final AuxiliaryLocalPathHandler localDirs;
    private final Function<String, String> userOfJob;
    private final java.util.concurrent.atomic.AtomicLong resolved = new java.util.concurrent.atomic.AtomicLong();

    /** @param userOfJob the user who runs a job (by job id string), null for a job the node does not know */
    MapOutputFiles(JobConf conf, AuxiliaryLocalPathHandler localDirs, Function<String, String> userOfJob) {
        this.conf = conf;
        this.localDirs = localDirs;
        this.userOfJob = userOfJob;
    }

    @Override
    public MapOutputRegistry.ResolvedOutput resolve(String app, int shuffleId, long mapId) throws IOException {
        if (shuffleId != MapReduceIds.SHUFFLE) {
            return null;
        }
        JobID job;
        TaskAttemptID attempt;
        try {
            job = MapReduceIds.jobOf(app);
            attempt = MapReduceIds.mapAttempt(job, mapId);
        } catch (IllegalArgumentException notMapReduce) {
            return null;
        }
        String user = userOfJob.apply(job.toString());
        if (user == null) {
            return null;
        }
        String base = "usercache/" + user + "/appcache/" + app + "/output/" + attempt + "/";
        Path index;
        Path data;
        try {
            index = localDirs.getLocalPathForRead(base + "file.out.index");
            data = localDirs.getLocalPathForRead(base + "file.out");
        } catch (IOException missing) { // DiskErrorException: on no local dir
            LOG.log(System.Logger.Level.DEBUG, () -> "no output of " + attempt + " here: " + missing.getMessage());
            return null; // lost, or never here: the reducer reports it and the map is re-run
        }
        java.nio.file.Path dataFile = java.nio.file.Path.of(data.toUri().getPath());
        SpillRecord spill = new SpillRecord(index, conf, user);
        long[] offsets = new long[spill.size() + 1];
        long[] raw = new long[spill.size()];
        for (int p = 0; p < spill.size(); p++) {
            IndexRecord r = spill.getIndex(p);
            if (r.startOffset != offsets[p] || r.partLength < 0 || r.rawLength < 0) {
                throw new IOException(index + ": partition " + p + " at " + r.startOffset + " (" + r.partLength
                        + " bytes) does not follow the previous one's end " + offsets[p]);
            }
            offsets[p + 1] = r.startOffset + r.partLength;
            raw[p] = r.rawLength;
        }
        long size = Files.size(dataFile);
        if (size != offsets[spill.size()]) {
            throw new IOException(dataFile + " has " + size + " bytes but its index ends at " + offsets[spill.size()]);
        }
        resolved.incrementAndGet();
        return new MapOutputRegistry.ResolvedOutput(dataFile, offsets, raw);
    }

    /** Map outputs found and handed to the registry so far. */
    long resolved() {
        return resolved.get();
    }
}
