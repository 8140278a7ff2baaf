package org.rdmashuffle.hadoop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.apache.hadoop.mapred.IndexRecord;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.SpillRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The service reads MapReduce's index itself (bounded in size, opened without following links) instead
 * of through SpillRecord, which allocates whatever size the file claims: it must read exactly what
 * SpillRecord writes, and refuse what SpillRecord would refuse.
 */
class MapOutputIndexTest {
    @TempDir
    Path dir;

    private Path writtenBySpillRecord(long[][] partitions) throws IOException {
        SpillRecord spill = new SpillRecord(partitions.length);
        for (int p = 0; p < partitions.length; p++) {
            spill.putIndex(new IndexRecord(partitions[p][0], partitions[p][1], partitions[p][2]), p);
        }
        Path index = dir.resolve("file.out.index");
        spill.writeToFile(new org.apache.hadoop.fs.Path(index.toUri()), new JobConf(false));
        return index;
    }

    @Test
    void anIndexWrittenBySpillRecordIsReadAsItWasWritten() throws IOException {
        // (start offset, raw length, part length) per partition, end to end.
        Path index = writtenBySpillRecord(new long[][] {{0, 120, 100}, {100, 0, 0}, {100, 900, 350}});
        long[][] read = MapOutputFiles.readIndex(index, Files.readAllBytes(index));
        assertArrayEquals(new long[] {0, 100, 100, 450}, read[0]);
        assertArrayEquals(new long[] {120, 0, 900}, read[1]);
    }

    @Test
    void aTamperedIndexFailsItsChecksum() throws IOException {
        Path index = writtenBySpillRecord(new long[][] {{0, 120, 100}, {100, 900, 350}});
        byte[] bytes = Files.readAllBytes(index);
        bytes[23] ^= 1; // partition 0's length
        IOException e = assertThrows(IOException.class, () -> MapOutputFiles.readIndex(index, bytes));
        assertTrue(e.getMessage().contains("checksum error"), e.getMessage());
    }

    @Test
    void partitionsThatDoNotFollowEachOtherAreRefused() throws IOException {
        Path index = writtenBySpillRecord(new long[][] {{0, 120, 100}, {40, 900, 350}});
        IOException e = assertThrows(IOException.class, () -> MapOutputFiles.readIndex(index, Files.readAllBytes(index)));
        assertTrue(e.getMessage().contains("partition 1 at 40"), e.getMessage());
    }
}
