package org.rdmashuffle.core.server.files;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How the service searches an application's directories for outputs ({@link Confinement#exists},
 * {@link Confinement#list}) against a tenant that plants links, FIFOs and floods of entries there:
 * nothing behind a link is looked at, and no directory is read beyond a bound.
 */
class ConfinedSearchTest {
    @TempDir
    Path dir;
    private Path appDir;
    private Path theirs;
    private Confinement confinement;

    @BeforeEach
    void layOut() throws IOException {
        Path nmLocal = Files.createDirectories(dir.resolve("nm-local"));
        Files.createDirectories(nmLocal.resolve("usercache/mallory/appcache/application_1_0001"));
        appDir = Confinement.applicationDir(nmLocal, "usercache/mallory/appcache/application_1_0001");
        theirs = Files.createDirectories(nmLocal.resolve("usercache/bob/appcache/application_1_0002/blockmgr-b"));
        Files.writeString(Files.createDirectories(theirs.resolve("0a")).resolve("shuffle_0_1_0.index"), "bob's");
        confinement = new Confinement(List.of(appDir), null);
    }

    @Test
    void aLinkedDirectoryIsNamedInAListing_butNeitherSearchedNorListed_whetherOrNotItsTargetExists() throws IOException {
        Files.createSymbolicLink(appDir.resolve("blockmgr-x"), theirs);
        Files.createSymbolicLink(appDir.resolve("blockmgr-y"), dir.resolve("nm-local/usercache/bob/appcache/gone"));

        assertEquals(List.of("blockmgr-x", "blockmgr-y"),
                confinement.list(appDir, n -> n.startsWith("blockmgr-"), 10, 10).names().stream().sorted().toList());
        for (String link : List.of("blockmgr-x", "blockmgr-y")) {
            assertFalse(confinement.exists(appDir.resolve(link + "/0a/shuffle_0_1_0.index")), link);
            RefusedFileException e = assertThrows(RefusedFileException.class,
                    () -> confinement.list(appDir.resolve(link), n -> true, 10, 10));
            assertEquals(appDir.resolve(link) + " is a symbolic link", e.getMessage());
        }
    }

    @Test
    void aLinkOrFifoAsTheFileItselfIsPresent_andRefusedWhenOpened() throws Exception {
        Path sub = Files.createDirectories(appDir.resolve("blockmgr-a/0a"));
        Path link = Files.createSymbolicLink(sub.resolve("shuffle_0_1_0.index"), theirs.resolve("0a/shuffle_0_1_0.index"));
        Path fifo = sub.resolve("shuffle_0_2_0.index");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start().waitFor());

        assertTrue(confinement.exists(link), "a planted link is there (its target is not looked at)");
        assertThrows(RefusedFileException.class, () -> confinement.open(link, false));
        assertTimeoutPreemptively(Duration.ofSeconds(10), () -> assertTrue(confinement.exists(fifo)));
        assertFalse(confinement.exists(sub.resolve("shuffle_0_3_0.index")));
    }

    @Test
    void aFloodOfEntriesIsReadOnlyUpToTheBounds() throws IOException {
        Path flooded = Files.createDirectories(appDir.resolve("flood"));
        for (int i = 0; i < 5000; i++) {
            Files.createFile(flooded.resolve((i % 2 == 0 ? "blockmgr-" : "junk-") + i));
        }
        Confinement.Listing byNames = confinement.list(flooded, n -> n.startsWith("blockmgr-"), 10, 4096);
        assertEquals(10, byNames.names().size());
        assertTrue(byNames.truncated() && byNames.scanned() < 4096, byNames.toString());

        Confinement.Listing byScan = confinement.list(flooded, n -> n.startsWith("nothing"), 10, 100);
        assertEquals(new Confinement.Listing(List.of(), 100, true), byScan);

        Confinement.Listing whole = confinement.list(flooded, n -> n.equals("junk-1"), 10, 10_000);
        assertEquals(new Confinement.Listing(List.of("junk-1"), 5000, false), whole);
    }

    @Test
    void aDirectoryOutsideTheApplicationsIsNeitherListedNorSearched() {
        assertThrows(RefusedFileException.class, () -> confinement.list(theirs, n -> true, 10, 10));
        assertThrows(RefusedFileException.class, () -> confinement.exists(theirs.resolve("0a/shuffle_0_1_0.index")));
        assertThrows(RefusedFileException.class, () -> confinement.exists(appDir.resolve("../application_1_0002")));
    }
}
