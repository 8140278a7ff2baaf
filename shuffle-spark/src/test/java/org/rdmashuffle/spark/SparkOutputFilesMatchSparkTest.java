package org.rdmashuffle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.core.service.SparkOutputDirs;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.server.MapOutputRegistry;
import org.rdmashuffle.core.service.SparkOutputFiles;

/**
 * The node service's finder of Spark's outputs (shuffle-core, Spark-free) against Spark itself: files
 * laid out by Spark's own DiskBlockManager are found where Spark's hashing put them.
 */
class SparkOutputFilesMatchSparkTest {
    @TempDir
    Path dir;

    @Test
    void outputsLaidOutBySparksOwnDiskBlockManager_areFoundWhereSparkPutThem_withoutASearch() throws IOException {
        // An executor on a NodeManager with two local dirs: its local dirs are the application's dir on each.
        Path app = dir.resolve("application_1_0002");
        List<Path> roots = List.of(Files.createDirectories(dir.resolve("nm-local-1/appcache").resolve(app.getFileName())),
                Files.createDirectories(dir.resolve("nm-local-2/appcache").resolve(app.getFileName())));
        org.apache.spark.SparkConf conf = new org.apache.spark.SparkConf(false)
                .set("spark.local.dir", roots.get(0) + "," + roots.get(1));
        org.apache.spark.util.Utils$.MODULE$.clearLocalRootDirs();
        org.apache.spark.storage.DiskBlockManager disk = new org.apache.spark.storage.DiskBlockManager(conf, false, false);
        try {
            for (long map = 0; map < 40; map++) {
                Path index = disk.getFile(new org.apache.spark.storage.ShuffleIndexBlockId(2, map, 0)).toPath();
                Path data = disk.getFile(new org.apache.spark.storage.ShuffleDataBlockId(2, map, 0)).toPath();
                SparkOutputDirs.writeIndex(index, 0, 3, 8);
                Files.write(data, new byte[8]);
            }
            SparkOutputFiles files = new SparkOutputFiles(a -> SparkOutputDirs.confined(a.equals("application_1_0002") ? roots : List.of()));
            for (long map = 0; map < 40; map++) {
                MapOutputRegistry.ResolvedOutput out = files.resolve("application_1_0002", 2, map);
                assertEquals(disk.getFile(new org.apache.spark.storage.ShuffleDataBlockId(2, map, 0)).toPath(), out.dataFile().path());
            }
            assertEquals(40, files.resolved());
            assertEquals(0, files.searches(), "every file was where Spark's hashing put it");

            assertNull(files.resolve("application_1_0002", 2, 40), "an output never written");
            assertEquals(1, files.searches(), "a file not where it hashes is searched for everywhere");
        } finally {
            disk.stop();
            org.apache.spark.util.Utils$.MODULE$.clearLocalRootDirs();
        }
    }
}
