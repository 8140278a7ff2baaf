package org.rdmashuffle.core.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.file.Path;

import com.code_intelligence.jazzer.junit.FuzzTest;

import org.rdmashuffle.core.server.files.Confinement;

/**
 * A Spark index file as a tenant can plant it in its block manager's directories (the service reads
 * what the application's user wrote): {@link SparkOutputFiles#readIndex} of any bytes, then the check the
 * service's registry makes of every index it is handed (OutputIndex.of, which MapOutputRegistry runs on
 * each output it finds). Contract: a file that is not numPartitions + 1 longs is an IOException; the
 * offsets returned are its big-endian longs, one per 8 bytes; and the registry either refuses them with an
 * IllegalArgumentException or takes an index that starts at 0 and never decreases (so no offset is
 * negative). Nothing else escapes; the input is bounded as the service bounds it ({@link
 * Confinement#MAX_INDEX_BYTES}). docs/fuzzing.md
 */
class SparkIndexFuzzTest {
    private static final Path INDEX = Path.of("/fuzz/blockmgr-0/0c/shuffle_3_7_0.index");
    /** The registry's check (package-private in shuffle-core): called as the registry calls it. */
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
    void readIndex(byte[] file) throws Throwable {
        if (file.length > Confinement.MAX_INDEX_BYTES) {
            return; // the service reads no more than this (Confinement.readAll)
        }
        long[] offsets;
        try {
            offsets = SparkOutputFiles.readIndex(INDEX, file);
        } catch (IOException refused) {
            assertTrue(file.length < 16 || file.length % 8 != 0, "a file of " + file.length + " bytes refused: " + refused);
            return;
        }
        assertTrue(file.length >= 16 && file.length % 8 == 0, "a file of " + file.length + " bytes taken for an index");
        assertEquals(file.length / 8, offsets.length, "offsets of a file of " + file.length + " bytes");
        ByteBuffer longs = ByteBuffer.wrap(file);
        for (int i = 0; i < offsets.length; i++) {
            assertEquals(longs.getLong(8 * i), offsets[i], "offset " + i);
        }
        if (registryTakes(offsets)) {
            assertEquals(0, offsets[0], "the registry took an index that does not start at 0");
            for (int p = 1; p < offsets.length; p++) {
                assertTrue(offsets[p] >= offsets[p - 1], "the registry took offset " + p + " below offset " + (p - 1));
            }
        }
    }

    /** Whether the registry takes these offsets; it refuses with an IllegalArgumentException, and with nothing else. */
    static boolean registryTakes(long[] offsets) throws Throwable {
        try {
            OUTPUT_INDEX_OF.invoke(null, 3, 7L, offsets, null, "map output 7 of shuffle 3 (" + INDEX + ")");
            return true;
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof IllegalArgumentException) {
                return false;
            }
            throw e.getCause();
        }
    }
}
