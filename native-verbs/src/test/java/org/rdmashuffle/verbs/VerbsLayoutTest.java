package org.rdmashuffle.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemoryLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The generated Java layouts must match the C compiler's view of the installed verbs.h: a C
 * program ({@code src/test/c/verbs_layout.c}) prints sizeof/offsetof for every struct and ops slot the
 * bindings use, and each line is checked against the jextract layout of the same name. Catches
 * bindings generated from another rdma-core version than the one installed.
 */
class VerbsLayoutTest {
    private static final String FFI = "org.rdmashuffle.verbs.ffi.";
    private static final Path HEADER = Path.of("/usr/include/infiniband/verbs.h");

    @Test
    void generatedLayoutsMatchTheInstalledHeader(@TempDir Path dir) throws Exception {
        Assumptions.assumeTrue(Files.exists(HEADER), HEADER + " missing: install rdma-core's headers (libibverbs-dev)");
        Assumptions.assumeTrue(onPath("gcc"), "gcc is not on PATH");
        // src/test/c is a test-resource directory, so the program travels with the test classes.
        Path source = dir.resolve("verbs_layout.c");
        try (var in = VerbsLayoutTest.class.getResourceAsStream("/verbs_layout.c")) {
            assertTrue(in != null, "verbs_layout.c is not on the test classpath");
            Files.copy(in, source);
        }
        Path exe = dir.resolve("verbs_layout");
        run(List.of("gcc", "-Wall", "-Werror", "-o", exe.toString(), source.toString()));
        List<String> lines = run(List.of(exe.toString()));
        assertTrue(lines.size() > 100, "expected the full list, got " + lines.size() + " lines");
        List<String> mismatches = new ArrayList<>();
        for (String line : lines) {
            String[] f = line.split(" ");
            Class<?> struct = Class.forName(FFI + f[1]);
            long java;
            long c;
            if (f[0].equals("sizeof")) {
                java = ((MemoryLayout) struct.getMethod("layout").invoke(null)).byteSize();
                c = Long.parseLong(f[2]);
            } else {
                java = offsetOf(struct, f[2].split("\\."));
                c = Long.parseLong(f[3]);
            }
            if (java != c) {
                mismatches.add(line + " but the Java layout says " + java);
            }
        }
        assertEquals(List.of(), mismatches, "layouts that differ from the C compiler's");
    }

    /**
     * The offset the code would use: the sum of the generated {@code field$offset()} accessors
     * along the path, descending into the nested classes jextract makes for inline structs and
     * unions. (Fields of a named struct type are checked as that struct, on lines of their own.)
     */
    private static long offsetOf(Class<?> struct, String[] path) throws ReflectiveOperationException {
        long offset = 0;
        Class<?> c = struct;
        for (int i = 0; i < path.length; i++) {
            offset += (long) c.getMethod(path[i] + "$offset").invoke(null);
            if (i + 1 < path.length) {
                c = memberClass(c, path[i]);
            }
        }
        return offset;
    }

    private static Class<?> memberClass(Class<?> outer, String field) throws ReflectiveOperationException {
        for (Class<?> nested : outer.getClasses()) {
            if (nested.getSimpleName().equals(field)) {
                return nested;
            }
        }
        throw new AssertionError(outer.getSimpleName() + "." + field + " has no nested class: list its struct on its own line");
    }

    private static boolean onPath(String tool) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (Files.isExecutable(Path.of(dir, tool))) {
                return true;
            }
        }
        return false;
    }

    private static List<String> run(List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), command + " did not finish");
        assertEquals(0, p.exitValue(), command + " failed:\n" + out);
        return out.lines().filter(l -> !l.isBlank()).toList();
    }
}
