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
                () -> EngineRuntime.load(EngineRuntimeTest.class, Runnable.class, "org.rdmashuffle.NoSuchEngineClass", new Class<?>[0]));
        assertTrue(e.getMessage().contains("org.rdmashuffle.NoSuchEngineClass"), e.getMessage());
    }

    /**
     * As on a Spark executor given the plugin through spark.jars: the engine side is in a jar only the
     * façade's loader sees, not the loader of the host's interface it is made as. Found through the former.
     */
    @Test
    void anEngineSideOnlyTheFacadesLoaderSees_isFound(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path src = java.nio.file.Files.createDirectories(dir.resolve("src/userjar"));
        java.nio.file.Files.writeString(src.resolve("Facade.java"), "package userjar; public class Facade {}");
        java.nio.file.Files.writeString(src.resolve("EngineSide.java"),
                "package userjar; public class EngineSide implements Runnable { public void run() {} }");
        java.nio.file.Path classes = java.nio.file.Files.createDirectories(dir.resolve("classes"));
        assertEquals(0, javax.tools.ToolProvider.getSystemJavaCompiler().run(null, null, null, "-d", classes.toString(),
                src.resolve("Facade.java").toString(), src.resolve("EngineSide.java").toString()));
        try (java.net.URLClassLoader userJar = new java.net.URLClassLoader(new java.net.URL[] {classes.toUri().toURL()},
                EngineRuntimeTest.class.getClassLoader())) {
            Class<?> facade = userJar.loadClass("userjar.Facade");
            Runnable engineSide = EngineRuntime.load(facade, Runnable.class, "userjar.EngineSide", new Class<?>[0]);
            assertEquals(userJar, engineSide.getClass().getClassLoader());
            assertThrows(IllegalStateException.class, () -> EngineRuntime.load(Runnable.class, Runnable.class,
                    "userjar.EngineSide", new Class<?>[0]), "the host interface's loader does not see the user jar");
        }
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
