package org.rdmashuffle.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;

import org.junit.jupiter.api.Test;

/** Which JVMs run the engine, and the one line an older JVM is told (RS09). */
class EngineRuntimeTest {
    @Test
    void java17And21AreToldWhyInOneRs09Line() {
        for (int feature : new int[] {17, 21, 24}) {
            String why = EngineRuntime.unavailable(feature, feature + ".0.9", "/jdk" + feature).orElseThrow();
            assertTrue(why.startsWith("RS09 jvm: saw Java " + feature + ".0.9 (/jdk" + feature + ")"), why);
            assertTrue(why.contains("needs Java 25 or newer"), why);
            assertEquals(Optional.of(Trouble.JVM), Trouble.in(why));
            assertEquals(1, why.lines().count(), why);
        }
    }

    @Test
    void theEnginesOwnReleaseAndNewerRunIt() {
        assertEquals(Optional.empty(), EngineRuntime.unavailable(EngineRuntime.REQUIRED_FEATURE, "25", "/jdk"));
        assertEquals(Optional.empty(), EngineRuntime.unavailable(26, "26", "/jdk"));
        assertEquals(Optional.empty(), EngineRuntime.unavailable(), "this test runs on the engine's JVM");
    }

    /** Stands for an engine-side class: made by name, seen only through an interface of a loader above it. */
    public static final class MadeByName implements Runnable {
        @Override
        public void run() {
        }
    }

    @Test
    void theClassIsLookedUpWhereTheCallerCameFrom_notWhereTheInterfaceDid() {
        // Runnable comes from the boot loader, which cannot see this test's classes: as Spark's ShuffleManager
        // comes from Spark's loader, which cannot see the plugin's classes when the plugin is a user jar.
        assertTrue(EngineRuntime.load(Runnable.class, EngineRuntimeTest.class, MadeByName.class.getName(),
                new Class<?>[0]) instanceof MadeByName);
    }

    @Test
    void aClassThatCannotBeLoadedIsNamed() {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> EngineRuntime.load(Runnable.class, EngineRuntimeTest.class, "org.rdmashuffle.NoSuchEngineClass", new Class<?>[0]));
        assertTrue(e.getMessage().contains("org.rdmashuffle.NoSuchEngineClass"), e.getMessage());
    }

    @Test
    void theClassesOlderJvmsLoadAreBuiltForJava17() throws Exception {
        for (Class<?> c : new Class<?>[] {EngineRuntime.class, Trouble.class}) {
            try (var in = c.getResourceAsStream(c.getSimpleName() + ".class")) {
                byte[] head = in.readNBytes(8);
                assertEquals(61, ((head[6] & 0xff) << 8) | (head[7] & 0xff), c + " is built for Java 17 (class file 61)");
            }
        }
    }
}
