package org.rdmashuffle.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

import org.apache.spark.SparkConf;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.server.MapOutputRegistry;
import scala.Option;

/**
 * Outputs moved to this executor by a decommissioned one are found by Spark's own naming and served;
 * what a peer names is only two ids, and files that are links, an index too large to be one, or data
 * shorter than its index says are not served.
 */
class MovedOutputsTest {
    @TempDir
    Path dir;

    /** Spark's resolver with its file naming pointed at {@code dir} (no block manager needed). */
    private IndexShuffleBlockResolver spark() {
        return new IndexShuffleBlockResolver(new SparkConf(false), (org.apache.spark.storage.BlockManager) null) {
            @Override
            public File getIndexFile(int shuffleId, long mapId, Option<String[]> dirs) {
                return dir.resolve("shuffle_" + shuffleId + "_" + mapId + "_0.index").toFile();
            }

            @Override
            public File getDataFile(int shuffleId, long mapId) {
                return dir.resolve("shuffle_" + shuffleId + "_" + mapId + "_0.data").toFile();
            }
        };
    }

    private void writeOutput(int shuffleId, long mapId, long[] offsets, long dataBytes) throws IOException {
        ByteBuffer index = ByteBuffer.allocate(offsets.length * 8);
        for (long o : offsets) {
            index.putLong(o);
        }
        Files.write(dir.resolve("shuffle_" + shuffleId + "_" + mapId + "_0.index"), index.array());
        try (RandomAccessFile data = new RandomAccessFile(dir.resolve("shuffle_" + shuffleId + "_" + mapId + "_0.data").toFile(),
                "rw")) {
            data.setLength(dataBytes);
        }
    }

    @Test
    void aMovedOutputIsFoundByItsIds_withItsOffsets() throws IOException {
        writeOutput(3, 7, new long[] {0, 100, 100, 250}, 250);
        MapOutputRegistry.ResolvedOutput r = new MovedOutputs(spark()).resolve("app", 3, 7);
        assertArrayEquals(new long[] {0, 100, 100, 250}, r.offsets());
        assertEquals(dir.resolve("shuffle_3_7_0.data"), r.dataFile().path());
        assertNull(new MovedOutputs(spark()).resolve("app", 3, 8), "an output not here: no such map output");
    }

    @Test
    void negativeIdsAreNotLookedUp() throws IOException {
        writeOutput(3, 7, new long[] {0, 10}, 10);
        assertNull(new MovedOutputs(spark()).resolve("app", -3, 7));
        assertNull(new MovedOutputs(spark()).resolve("app", 3, -7));
    }

    @Test
    void aSymlinkedIndexOrDataFileIsNotServed() throws IOException {
        Path secret = Files.writeString(dir.resolve("secret"), "not a shuffle file");
        writeOutput(1, 1, new long[] {0, 18}, 18);
        Files.delete(dir.resolve("shuffle_1_1_0.data"));
        Files.createSymbolicLink(dir.resolve("shuffle_1_1_0.data"), secret);
        assertThrows(IOException.class, () -> new MovedOutputs(spark()).resolve("app", 1, 1), "a linked data file");

        writeOutput(1, 2, new long[] {0, 18}, 18);
        Path realIndex = Files.move(dir.resolve("shuffle_1_2_0.index"), dir.resolve("elsewhere.index"));
        Files.createSymbolicLink(dir.resolve("shuffle_1_2_0.index"), realIndex);
        assertNull(new MovedOutputs(spark()).resolve("app", 1, 2), "a linked index is not an output of ours");
    }

    @Test
    void anIndexTooLargeToBeOneIsRefusedBeforeItIsRead() throws IOException {
        try (RandomAccessFile huge = new RandomAccessFile(dir.resolve("shuffle_2_0_0.index").toFile(), "rw")) {
            huge.setLength(((1L << 24) + 2) * 8); // sparse: nothing of it is on disk, and nothing is read
        }
        IOException e = assertThrows(IOException.class, () -> new MovedOutputs(spark()).resolve("app", 2, 0));
        assertTrue(e.getMessage().contains("more partitions than a shuffle can have"), e.getMessage());
    }

    @Test
    void dataShorterThanItsIndexSaysIsRefused() throws IOException {
        writeOutput(4, 0, new long[] {0, 500, 1000}, 999);
        IOException e = assertThrows(IOException.class, () -> new MovedOutputs(spark()).resolve("app", 4, 0));
        assertTrue(e.getMessage().contains("its index ends at 1000"), e.getMessage());
    }
}
