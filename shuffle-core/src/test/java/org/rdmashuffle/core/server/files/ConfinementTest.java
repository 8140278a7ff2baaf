package org.rdmashuffle.core.server.files;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tenant's tricks with the files it leaves for the shuffle service, each refused: the file itself a
 * link, a linked directory leading out, a FIFO, a file of another user, a linked application
 * directory, a huge index. Written from the attacker's side: it controls everything below its
 * application directory.
 */
class ConfinementTest {
    @TempDir
    Path dir;
    private Path nmLocal;
    private Path appDir;
    private Path secret;
    private Confinement confinement;

    @BeforeEach
    void layOut() throws IOException {
        nmLocal = Files.createDirectories(dir.resolve("nm-local"));
        appDir = Confinement.applicationDir(nmLocal,
                Files.createDirectories(nmLocal.resolve("usercache/alice/appcache/application_1_0001")).toString()
                        .substring(nmLocal.toString().length() + 1));
        secret = Files.writeString(Files.createDirectories(dir.resolve("nm-recovery")).resolve("keytab"), "the node's own secret");
        confinement = new Confinement(List.of(appDir), null);
    }

    @Test
    void anApplicationsOwnFileOpens() throws IOException {
        Path data = Files.write(Files.createDirectories(appDir.resolve("blockmgr-1/0a")).resolve("shuffle_0_1_0.data"),
                new byte[] {1, 2, 3});
        try (FileChannel ch = confinement.open(data, true)) {
            assertEquals(3, ch.size());
        }
        assertArrayEquals(new byte[] {1, 2, 3}, confinement.readAll(data, 3));
    }

    @Test
    void aSymlinkedDataFileIsRefused() throws IOException {
        Path link = Files.createSymbolicLink(Files.createDirectories(appDir.resolve("blockmgr-1/0a")).resolve("shuffle_0_1_0.data"),
                secret);
        RefusedFileException e = assertThrows(RefusedFileException.class, () -> confinement.open(link, false));
        assertTrue(e.getMessage().contains("symbolic link"), e.getMessage());
    }

    @Test
    void aSymlinkedDirectoryLeadingOutOfTheApplicationIsRefused() throws IOException {
        Path manager = Files.createDirectories(appDir.resolve("blockmgr-1"));
        Files.createSymbolicLink(manager.resolve("0a"), secret.getParent());
        Path viaLink = manager.resolve("0a").resolve(secret.getFileName());
        RefusedFileException e = assertThrows(RefusedFileException.class, () -> confinement.open(viaLink, false));
        assertTrue(e.getMessage().contains(manager.resolve("0a") + " is a symbolic link"), e.getMessage());
    }

    /**
     * The tenant probes another application's directory through links on the way to a file name: if a
     * link to an existing directory were refused while one to a missing path were "no such file", the
     * reducer's error would tell which directories exist. Both must fail alike, without looking behind.
     */
    @Test
    void aLinkedDirectoryOnTheWayIsRefused_whetherOrNotItsTargetExists() throws IOException {
        Path theirs = Files.createDirectories(dir.resolve("nm-local/usercache/bob/appcache/application_1_0009/blockmgr-9/0a"));
        Files.writeString(theirs.resolve("shuffle_0_1_0.data"), "bob's output");
        Path toExisting = Files.createSymbolicLink(Files.createDirectories(appDir.resolve("blockmgr-1")).resolve("0a"), theirs);
        Path toMissing = Files.createSymbolicLink(Files.createDirectories(appDir.resolve("blockmgr-2")).resolve("0a"),
                dir.resolve("nm-local/usercache/bob/appcache/application_1_0010/blockmgr-9/0a"));

        IOException existing = assertThrows(IOException.class,
                () -> confinement.open(toExisting.resolve("shuffle_0_1_0.data"), false));
        IOException missing = assertThrows(IOException.class,
                () -> confinement.readAll(toMissing.resolve("shuffle_0_1_0.data"), 1024));

        assertEquals(RefusedFileException.class, existing.getClass(), String.valueOf(existing));
        assertEquals(RefusedFileException.class, missing.getClass(), "a missing target told apart: " + missing);
        assertEquals(existing.getMessage().replace("blockmgr-1", "blockmgr-2"), missing.getMessage(),
                "the same words whether or not the target exists");
        assertTrue(existing.getMessage().contains("symbolic link"), existing.getMessage());
        assertFalse(existing.getMessage().contains("bob") || missing.getMessage().contains("bob"),
                "a target named: " + existing.getMessage() + " / " + missing.getMessage());
    }

    @Test
    void anotherApplicationsFileIsOutsideThisOnesConfinement() throws IOException {
        Path other = Files.createDirectories(nmLocal.resolve("usercache/alice/appcache/application_1_0002"));
        Path theirs = Files.writeString(other.resolve("shuffle_0_1_0.data"), "theirs");
        assertThrows(RefusedFileException.class, () -> confinement.open(theirs, false));
    }

    @Test
    void aFifoPlantedAsAnIndexNeitherBlocksNorOpens() throws Exception {
        Path fifo = appDir.resolve("shuffle_0_1_0.index");
        Process mkfifo = new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start();
        assertEquals(0, mkfifo.waitFor());
        RefusedFileException e = assertTimeoutPreemptively(Duration.ofSeconds(10),
                () -> assertThrows(RefusedFileException.class, () -> confinement.readAll(fifo, 1024)));
        assertTrue(e.getMessage().contains("not a regular file"), e.getMessage());
    }

    @Test
    void aFileOfAnotherOwnerIsRefused() throws IOException {
        Path data = Files.writeString(appDir.resolve("shuffle_0_1_0.data"), "data");
        String me = Files.getOwner(data).getName();
        try (FileChannel ch = new Confinement(List.of(appDir), me).open(data, false)) {
            assertEquals(4, ch.size(), "the application's own user's file");
        }
        // Under LinuxContainerExecutor the application's user differs from the NodeManager's: a file the
        // NodeManager's user owns (as a hard link to one of its own would be) is not the application's.
        RefusedFileException e = assertThrows(RefusedFileException.class,
                () -> new Confinement(List.of(appDir), "not-" + me).open(data, false));
        assertTrue(e.getMessage().contains("is owned by " + me + ", not by not-" + me), e.getMessage());
    }

    @Test
    void anApplicationDirectoryReplacedByALinkIsRefused() throws IOException {
        Path cache = nmLocal.resolve("usercache/mallory/appcache");
        Files.createDirectories(cache);
        Files.createSymbolicLink(cache.resolve("application_1_0003"), secret.getParent());
        RefusedFileException e = assertThrows(RefusedFileException.class,
                () -> Confinement.applicationDir(nmLocal, "usercache/mallory/appcache/application_1_0003"));
        assertTrue(e.getMessage().contains("symbolic link"), e.getMessage());
        assertThrows(RefusedFileException.class, () -> Confinement.applicationDir(nmLocal, "../nm-recovery"));
        assertThrows(RefusedFileException.class,
                () -> Confinement.applicationDirAt(cache.resolve("application_1_0003"), "usercache/mallory/appcache/application_1_0003"));
    }

    @Test
    void anApplicationDirHandedOutBelowALocalDirIsFoundFromItsFullPath() throws IOException {
        String relative = "usercache/alice/appcache/application_1_0001";
        assertEquals(appDir, Confinement.applicationDirAt(nmLocal.resolve(relative), relative));
        assertThrows(RefusedFileException.class, () -> Confinement.applicationDirAt(nmLocal.resolve("elsewhere"), relative),
                "a path that does not end with the application's directory");
    }

    @Test
    void aHugeIndexFileIsRefusedBeforeAnythingIsAllocated() throws IOException {
        Path index = appDir.resolve("shuffle_0_1_0.index");
        try (RandomAccessFile f = new RandomAccessFile(index.toFile(), "rw")) {
            f.setLength(64L << 30); // sparse: 64 GiB claimed, nothing on disk
        }
        RefusedFileException e = assertThrows(RefusedFileException.class,
                () -> confinement.readAll(index, Confinement.MAX_INDEX_BYTES));
        assertTrue(e.getMessage().contains("more than the " + Confinement.MAX_INDEX_BYTES), e.getMessage());
    }
}
