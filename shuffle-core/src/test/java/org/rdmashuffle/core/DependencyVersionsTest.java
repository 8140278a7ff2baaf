package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;
import java.util.Properties;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.core.DependencyVersions.Found;
import org.rdmashuffle.core.DependencyVersions.State;
import org.rdmashuffle.verbs.Trouble;

/** Which Netty and Kryo an engine starts with: those of the line it was built against, or its own relocated copies. */
class DependencyVersionsTest {
    @Test
    void aPatchApartIsTheSameLine_anotherMinorOrMajorIsNot() {
        assertTrue(DependencyVersions.sameLine("4.2.13.Final", "4.2.13.Final"));
        assertTrue(DependencyVersions.sameLine("4.2.13.Final", "4.2.15.Final"), "a Spark maintenance release's Netty");
        assertTrue(DependencyVersions.sameLine("4.2.13.Final", "4.2.0.Final"));
        assertFalse(DependencyVersions.sameLine("4.2.13.Final", "4.1.118.Final"), "Spark 3.5's and 4.0's line");
        assertFalse(DependencyVersions.sameLine("4.2.13.Final", "5.0.0.Alpha2"));
        assertFalse(DependencyVersions.sameLine("4.2.13.Final", "4.20.1.Final"), "4.20 is not 4.2");
        assertTrue(DependencyVersions.sameLine("4.0.3", "4.0.2"));
        assertFalse(DependencyVersions.sameLine("4.0.3", "5.6.2"), "Kryo 5");
        assertFalse(DependencyVersions.sameLine("4.0.3", "4.1.0"));
    }

    @Test
    void aVersionThatCannotBeRead_isNotTakenForAMismatch_butABrokenRecordIsAnError() {
        assertTrue(DependencyVersions.sameLine("4.2.13.Final", null));
        assertTrue(DependencyVersions.sameLine("4.2.13.Final", "unknown"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> DependencyVersions.sameLine("${netty.version}", "4.2.13.Final"));
        assertTrue(e.getMessage().contains("'${netty.version}'"), e.getMessage());
    }

    @Test
    void aMismatch_isOneRS11LineNamingBothVersionsOfEachLibraryThatDiffers() {
        List<Found> found = List.of(
                new Found("Netty", "netty-common", "4.2.13.Final", "4.1.118.Final", "/spark/jars/netty-common-4.1.118.Final.jar",
                        State.FOUND),
                new Found("Netty", "netty-buffer", "4.2.13.Final", "4.2.15.Final", "/spark/jars/netty-buffer-4.2.15.Final.jar",
                        State.FOUND),
                new Found("Netty", "netty-transport", "4.2.13.Final", "4.1.118.Final", "/spark/jars/netty-transport-4.1.118.Final.jar",
                        State.FOUND),
                new Found("Kryo", "kryo", "4.0.3", "5.6.2", "/spark/jars/kryo-5.6.2.jar", State.FOUND));
        String line = DependencyVersions.mismatch(found).orElseThrow();
        assertTrue(line.startsWith("RS11 dependency: saw Netty 4.1.118.Final (netty-common from /spark/jars/netty-common-"
                + "4.1.118.Final.jar; also netty-transport), Kryo 5.6.2 (kryo from /spark/jars/kryo-5.6.2.jar); needs Netty 4.2.x, "
                + "the line rdma-shuffle was built against (4.2.13.Final), Kryo 4.0.x, the line rdma-shuffle was built against "
                + "(4.0.3); fix: "), line);
        assertFalse(line.contains("netty-buffer"), "a patch apart is not named: " + line);
        assertEquals(Optional.of(Trouble.DEPENDENCY), Trouble.in(line));
        assertEquals(Optional.empty(), DependencyVersions.mismatch(found.subList(1, 2)), "a patch apart alone passes");
    }

    @Test
    void relocatedCopiesAreOurOwn_andAnAbsentClassIsAMismatch() {
        Found relocated = new Found("Netty", "netty-transport", "4.2.13.Final", "4.2.13.Final", "rdma-shuffle's jar",
                State.RELOCATED);
        assertEquals(Optional.empty(), DependencyVersions.mismatch(List.of(relocated)));
        Found absent = new Found("Netty", "netty-codec-base", "4.2.13.Final", null,
                "java.lang.NoClassDefFoundError: io/netty/handler/codec/LengthFieldBasedFrameDecoder", State.ABSENT);
        String line = DependencyVersions.mismatch(List.of(relocated, absent)).orElseThrow();
        assertTrue(line.startsWith("RS11 dependency: saw Netty absent (netty-codec-base: java.lang.NoClassDefFoundError: "), line);
    }

    /** The build's record, and this JVM's jars (Maven's, the very versions recorded) read as the engine reads Spark's. */
    @Test
    void thisBuildsClasspath_hasTheVersionsRecorded_readFromTheJarsThemselves() {
        Properties built = DependencyVersions.builtAgainst();
        List<Found> found = DependencyVersions.found(built);
        assertEquals(List.of("netty-common", "netty-buffer", "netty-transport", "netty-codec-base", "kryo"),
                found.stream().map(Found::library).toList());
        for (Found f : found) {
            assertEquals(State.FOUND, f.state(), f.toString());
            assertEquals(built.getProperty(f.library().equals("kryo") ? "kryo.version" : "netty.version"), f.version(),
                    f.toString());
            assertTrue(f.source().endsWith(".jar") && f.source().contains(f.library().equals("kryo") ? "kryo" : f.library()),
                    f.toString());
        }
        assertEquals(Optional.empty(), DependencyVersions.mismatch());
    }
}
