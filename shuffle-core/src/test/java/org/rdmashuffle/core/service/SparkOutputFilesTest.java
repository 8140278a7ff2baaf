package org.rdmashuffle.core.service;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.server.MapOutputRegistry;
import org.rdmashuffle.core.server.files.Confinement;

/** Spark's on-disk layout as executors leave it, found by the service from the application's directories alone. */
class SparkOutputFilesTest {
    @TempDir
    Path dir;

    private SparkOutputFiles filesOf(String app, Path appDir) {
        return new SparkOutputFiles(a -> SparkOutputDirs.confined(a.equals(app) ? List.of(appDir) : List.of()));
    }

    @Test
    void anOutputWhoseIndexAndDataHashedIntoDifferentLocalDirs_isFound() throws IOException {
        Path app = dir.resolve("appcache/application_1_0001");
        SparkOutputDirs.writeIndex(app.resolve("blockmgr-a/0c/shuffle_3_17_0.index"), 0, 10, 10, 25);
        Path data = Files.createDirectories(app.resolve("blockmgr-b/3f")).resolve("shuffle_3_17_0.data");
        Files.write(data, new byte[25]);

        MapOutputRegistry.ResolvedOutput out = filesOf("application_1_0001", app).resolve("application_1_0001", 3, 17);

        assertEquals(data, out.dataFile().path());
        assertArrayEquals(new long[] {0, 10, 10, 25}, out.offsets());
        assertNull(out.rawLengths(), "Spark's index records no decompressed sizes");
    }

    @Test
    void anotherApplicationsOutput_orAnUnknownMap_isNotFound() throws IOException {
        Path app = dir.resolve("application_1_0001");
        SparkOutputDirs.writeIndex(app.resolve("blockmgr-a/00/shuffle_0_1_0.index"), 0, 4);
        Files.write(app.resolve("blockmgr-a/00/shuffle_0_1_0.data"), new byte[4]);
        SparkOutputFiles files = filesOf("application_1_0001", app);

        assertNull(files.resolve("application_1_0002", 0, 1), "app 2 named app 1's output");
        assertNull(files.resolve("application_1_0001", 0, 2), "map 2 was never written");
        assertNull(files.resolve("application_1_0001", 1, 1), "shuffle 1 was never written");
        assertEquals(0, files.resolved());
    }

    @Test
    void aTruncatedIndex_isAnErrorNamingTheFile() throws IOException {
        Path app = dir.resolve("application_1_0001");
        Path index = Files.createDirectories(app.resolve("blockmgr-a/01")).resolve("shuffle_0_1_0.index");
        Files.write(index, new byte[12]);

        IOException e = assertThrows(IOException.class, () -> filesOf("application_1_0001", app).resolve("application_1_0001", 0, 1));
        assertTrue(e.getMessage().contains(index.toString()) && e.getMessage().contains("12 bytes"), e.getMessage());
    }

    @Test
    void anIndexOfBytesWithoutItsDataFile_isAnError_butAnEmptyOutputIsJustAbsent() throws IOException {
        Path app = dir.resolve("application_1_0001");
        SparkOutputDirs.writeIndex(app.resolve("blockmgr-a/02/shuffle_0_1_0.index"), 0, 8);
        SparkOutputDirs.writeIndex(app.resolve("blockmgr-a/02/shuffle_0_2_0.index"), 0, 0, 0);
        SparkOutputFiles files = filesOf("application_1_0001", app);

        IOException e = assertThrows(IOException.class, () -> files.resolve("application_1_0001", 0, 1));
        assertTrue(e.getMessage().contains("data file is missing"), e.getMessage());
        assertNull(files.resolve("application_1_0001", 0, 2), "an output with every partition empty has no data file");
    }

    @Test
    void aSymlinkedIndexIsRefused() throws IOException {
        Path app = dir.resolve("application_1_0001");
        Path elsewhere = dir.resolve("nm-private/some.index");
        SparkOutputDirs.writeIndex(elsewhere, 0, 64);
        Path index = Files.createDirectories(app.resolve("blockmgr-a/03")).resolve("shuffle_0_1_0.index");
        Files.createSymbolicLink(index, elsewhere);
        Files.write(app.resolve("blockmgr-a/03/shuffle_0_1_0.data"), new byte[64]);

        IOException e = assertThrows(IOException.class, () -> filesOf("application_1_0001", app).resolve("application_1_0001", 0, 1));
        assertTrue(e instanceof org.rdmashuffle.core.server.files.RefusedFileException && e.getMessage().contains("symbolic link"),
                e.getMessage());
    }

    @Test
    void aHugeIndexFileIsRefused() throws IOException {
        Path app = dir.resolve("application_1_0001");
        Path index = Files.createDirectories(app.resolve("blockmgr-a/04")).resolve("shuffle_0_1_0.index");
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(index.toFile(), "rw")) {
            f.setLength(1L << 32); // 4 GiB claimed (sparse): would overflow an int-sized read, or fill the heap
        }
        IOException e = assertThrows(IOException.class, () -> filesOf("application_1_0001", app).resolve("application_1_0001", 0, 1));
        assertTrue(e.getMessage().contains("more than the " + Confinement.MAX_INDEX_BYTES), e.getMessage());
    }

    /**
     * A tenant plants {@code blockmgr-*} dirs and sub dirs that are links, to another application's
     * executor dir (holding the very output it asks for) or to a path that does not exist: if the
     * search followed them, the reducer's answer ("map output file refused" vs "no such map output")
     * would tell which paths exist elsewhere on the node. No link is searched, so both look the same.
     */
    @Test
    void aPlantedBlockManagerLinkIsNotFollowed_andIsNoExistenceOracle() throws IOException {
        Path nmLocal = dir.resolve("nm-local");
        Path bobs = nmLocal.resolve("usercache/bob/appcache/application_1_0009/blockmgr-b");
        for (String file : List.of("shuffle_0_5_0.index", "shuffle_0_5_0.data")) {
            SparkOutputDirs.writeIndex(bobs.resolve(SparkOutputFiles.subDirOf(file, 1)).resolve(file), 0, 8);
        }
        Path toExisting = plantLinks(nmLocal.resolve("usercache/mallory/appcache/application_1_0001"), bobs);
        Path toMissing = plantLinks(nmLocal.resolve("usercache/mallory/appcache/application_1_0002"),
                bobs.resolveSibling("blockmgr-gone"));

        assertEquals("no such output", outcome(filesOf("application_1_0001", toExisting), "application_1_0001"),
                "links to another application's outputs");
        assertEquals("no such output", outcome(filesOf("application_1_0002", toMissing), "application_1_0002"),
                "links to nothing");
    }

    /** An application dir with a linked {@code blockmgr-x} and a real {@code blockmgr-a} whose sub dirs are links, all to {@code target}. */
    private static Path plantLinks(Path app, Path target) throws IOException {
        Files.createDirectories(app.resolve("blockmgr-a"));
        Files.createSymbolicLink(app.resolve("blockmgr-x"), target);
        for (String file : List.of("shuffle_0_5_0.index", "shuffle_0_5_0.data")) {
            String sub = SparkOutputFiles.subDirOf(file, 1);
            if (Files.notExists(app.resolve("blockmgr-a").resolve(sub), java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                Files.createSymbolicLink(app.resolve("blockmgr-a").resolve(sub), target.resolve(sub));
            }
        }
        return app;
    }

    /** What a reducer asking for map 5 of shuffle 0 is told, in the service's fixed phrases. */
    private static String outcome(SparkOutputFiles files, String app) {
        try {
            return files.resolve(app, 0, 5) == null ? "no such output" : "found";
        } catch (org.rdmashuffle.core.server.files.RefusedFileException e) {
            return "refused";
        } catch (IOException e) {
            return "failed";
        }
    }

    /**
     * A tenant creates thousands of {@code blockmgr-*} entries so that every reducer's request for a
     * missing output would read them all, and every sub dir of each: the search reads a bounded number.
     */
    @Test
    void aFloodOfBlockManagerDirectoriesIsSearchedOnlyUpToTheBound() throws IOException {
        Path app = dir.resolve("application_1_0001");
        for (int i = 0; i < 5000; i++) {
            Files.createDirectories(app.resolve("blockmgr-" + i));
        }
        SparkOutputFiles files = filesOf("application_1_0001", app);

        assertNull(files.resolve("application_1_0001", 0, 1));
        assertEquals(1, files.searches());
        assertTrue(files.scanned() <= SparkOutputFiles.MAX_MANAGERS,
                files.scanned() + " entries read: more than the " + SparkOutputFiles.MAX_MANAGERS + " managers searched");
    }
}
