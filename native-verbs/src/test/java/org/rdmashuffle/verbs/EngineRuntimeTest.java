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

    @Test
    void aClassThatCannotBeLoadedIsNamed() {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> EngineRuntime.load(Runnable.class, "org.rdmashuffle.NoSuchEngineClass", new Class<?>[0]));
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
