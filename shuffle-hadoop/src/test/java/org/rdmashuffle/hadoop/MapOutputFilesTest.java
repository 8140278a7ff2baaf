package org.rdmashuffle.hadoop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.apache.hadoop.mapred.IndexRecord;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.SpillRecord;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.server.MapOutputRegistry;
import org.rdmashuffle.core.server.files.RefusedFileException;

/**
 * MapReduce outputs found in a NodeManager's local dirs, against a tenant that owns everything below
 * its application directory there and plants links in it.
 */
class MapOutputFilesTest {
    private static final String MALLORYS = "application_1700000000000_0001";
    private static final String MALLORYS_OTHER = "application_1700000000000_0003";
    private static final String BOBS = "application_1700000000000_0002";

    @TempDir
    Path dir;

    @Test
    void anOutputTheMapLeftIsFound() throws IOException {
        Path nmLocal = dir.resolve("nm-local");
        writeOutput(attemptDir(nmLocal, "mallory", MALLORYS));
        MapOutputFiles files = new MapOutputFiles(new FakeLocalDirs(dir.resolve("nm-local-empty"), nmLocal), job -> "mallory", false);

        MapOutputRegistry.ResolvedOutput out = files.resolve(MALLORYS, MapReduceIds.SHUFFLE, mapId(MALLORYS));

        assertEquals(attemptDir(nmLocal, "mallory", MALLORYS).resolve("file.out"), out.dataFile().path());
        assertArrayEquals(new long[] {0, 100, 450}, out.offsets());
        assertEquals(1, files.resolved());
    }

    /**
     * Mallory replaces the attempt directories of her own jobs with links: one to Bob's attempt
     * directory on the same node (holding a valid output), one to a path that does not exist. Were
     * links followed, the first would be "refused" and the second "no such output": her reducer would
     * learn which of Bob's directories exist. Neither is followed, so both are just absent.
     */
    @Test
    void aLinkedAttemptDirectoryIsNoExistenceOracle() throws IOException {
        Path nmLocal = dir.resolve("nm-local");
        Path bobsAttempt = writeOutput(attemptDir(nmLocal, "bob", BOBS));
        plantLink(attemptDir(nmLocal, "mallory", MALLORYS), bobsAttempt);
        plantLink(attemptDir(nmLocal, "mallory", MALLORYS_OTHER), bobsAttempt.resolveSibling("attempt_gone"));
        MapOutputFiles files = new MapOutputFiles(new FakeLocalDirs(nmLocal), job -> "mallory", false);

        assertEquals("no such output", outcome(files, MALLORYS), "a link to Bob's output");
        assertEquals("no such output", outcome(files, MALLORYS_OTHER), "a link to nothing");
    }

    private static void plantLink(Path attemptDir, Path target) throws IOException {
        Files.createSymbolicLink(Files.createDirectories(attemptDir.getParent()).resolve(attemptDir.getFileName()), target);
    }

    /** What a reducer asking for the job's map 5 is told, in the service's fixed phrases. */
    private static String outcome(MapOutputFiles files, String app) {
        try {
            return files.resolve(app, MapReduceIds.SHUFFLE, mapId(app)) == null ? "no such output" : "found";
        } catch (RefusedFileException e) {
            return "refused";
        } catch (IOException e) {
            return "failed";
        }
    }

    private static TaskAttemptID attempt(String app) {
        return MapReduceIds.mapAttempt(MapReduceIds.jobOf(app), (5L << 32));
    }

    private static long mapId(String app) {
        return MapReduceIds.mapId(attempt(app));
    }

    private static Path attemptDir(Path nmLocal, String user, String app) {
        return nmLocal.resolve("usercache/" + user + "/appcache/" + app + "/output/" + attempt(app));
    }

    /** A map's final output of two partitions (100 and 350 bytes) in {@code attemptDir}, as MapReduce writes it. */
    private static Path writeOutput(Path attemptDir) throws IOException {
        Files.createDirectories(attemptDir);
        Files.write(attemptDir.resolve("file.out"), new byte[450]);
        SpillRecord index = new SpillRecord(2);
        index.putIndex(new IndexRecord(0, 300, 100), 0);
        index.putIndex(new IndexRecord(100, 1000, 350), 1);
        index.writeToFile(new org.apache.hadoop.fs.Path(attemptDir.resolve("file.out.index").toString()), new JobConf(false));
        return attemptDir;
    }
}
