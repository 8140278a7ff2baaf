package org.rdmashuffle.hadoop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.CRC32;

import com.code_intelligence.jazzer.junit.FuzzTest;

import org.rdmashuffle.core.server.files.Confinement;

/**
 * A MapReduce index file (file.out.index) as a job's tasks can leave it in the application's directories:
 * {@link MapOutputFiles#readIndex} of any bytes, then the check the service's registry makes of every
 * index it is handed (OutputIndex.of, as MapOutputRegistry runs it). The first input byte says whether to
 * put the right CRC32 in the file's last 8 bytes (bit 0 set), so the fuzzer gets past the checksum; the
 * rest is the file.
 *
 * <p>Contract: a malformed index (size, checksum, partitions not end to end from 0, a negative length) is
 * an IOException; one that is read has (size - 8) / 24 partitions, offsets.length == partitions + 1,
 * offsets[0] == 0, offsets[p + 1] == offsets[p] + partLength[p] == the next partition's start, and
 * non-negative raw and part lengths, as the file says; the registry then takes it or refuses it with an
 * IllegalArgumentException, nothing else. Bounded as the service bounds it ({@link
 * Confinement#MAX_INDEX_BYTES}). docs/fuzzing.md
 */
class MapReduceIndexFuzzTest {
    private static final int RECORD = 24;
    private static final Path INDEX = Path.of("/fuzz/usercache/u/appcache/application_1_0001/output/attempt_1_0001_m_000007_0/file.out.index");
    private static final Method OUTPUT_INDEX_OF;

    static {
        try {
            OUTPUT_INDEX_OF = Class.forName("org.rdmashuffle.core.server.OutputIndex").getDeclaredMethod("of", int.class,
                    long.class, long[].class, long[].class, String.class);
            OUTPUT_INDEX_OF.setAccessible(true);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @FuzzTest
    void readIndex(byte[] input) throws Throwable {
        if (input.length == 0 || input.length - 1 > Confinement.MAX_INDEX_BYTES) {
            return;
        }
        byte[] file = Arrays.copyOfRange(input, 1, input.length);
        if ((input[0] & 1) != 0 && file.length >= 8) {
            CRC32 crc = new CRC32();
            crc.update(file, 0, file.length - 8);
            ByteBuffer.wrap(file).putLong(file.length - 8, crc.getValue());
        }
        long[][] read;
        try {
            read = MapOutputFiles.readIndex(INDEX, file);
        } catch (IOException refused) {
            return; // what makes it malformed is checked below, on the files that are taken
        }
        assertTrue(file.length >= RECORD + 8 && (file.length - 8) % RECORD == 0, "a file of " + file.length + " bytes taken");
        int partitions = (file.length - 8) / RECORD;
        ByteBuffer in = ByteBuffer.wrap(file);
        CRC32 crc = new CRC32();
        crc.update(file, 0, partitions * RECORD);
        assertEquals(crc.getValue(), in.getLong(partitions * RECORD), "an index with a wrong checksum taken");
        long[] offsets = read[0];
        long[] raw = read[1];
        assertEquals(partitions + 1, offsets.length, "offsets");
        assertEquals(partitions, raw.length, "raw lengths");
        assertEquals(0, offsets[0], "the first partition's start");
        for (int p = 0; p < partitions; p++) {
            long start = in.getLong(p * RECORD);
            long rawLength = in.getLong(p * RECORD + 8);
            long partLength = in.getLong(p * RECORD + 16);
            assertEquals(offsets[p], start, "partition " + p + " does not start where the one before ends");
            assertTrue(partLength >= 0 && rawLength >= 0, "partition " + p + ": part length " + partLength + ", raw length "
                    + rawLength);
            assertEquals(offsets[p] + partLength, offsets[p + 1], "partition " + p + "'s end");
            assertTrue(offsets[p + 1] >= offsets[p], "partition " + p + " ends before it starts");
            assertEquals(rawLength, raw[p], "partition " + p + "'s raw length");
        }
        try {
            OUTPUT_INDEX_OF.invoke(null, 3, 7L, offsets, raw, "map output 7 of shuffle 3 (" + INDEX + ")");
        } catch (InvocationTargetException e) {
            if (!(e.getCause() instanceof IllegalArgumentException)) {
                throw e.getCause();
            }
            // Refused by the registry: only raw lengths that add up beyond a long are left for it to refuse.
            long sum = 0;
            for (long r : raw) {
                sum += r;
                if (sum < 0) {
                    return;
                }
            }
            fail("the registry refused an index readIndex took: " + e.getCause().getMessage());
        }
    }
}
