package org.rdmashuffle.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The commands a person runs (every executable in bin/ and benchmarks/*.sh) answer --help and -h
 * with their usage and exit 0, and refuse an unknown flag or a bad value in one line naming it with
 * exit 2, all without building or starting anything: they run here with {@code mvn} and {@code java}
 * (on PATH and as JAVA_HOME, where bin/jdk.sh looks first) replaced by stubs that record being called.
 * The Java mains behind them refuse a bad value the same way, without a stack trace.
 */
class CommandsTest {
    /** What every command's usage must at least be checked on: a command that vanishes fails here. */
    private static final List<String> KNOWN = List.of("bin/shuffle-job", "bin/terasort-job", "bin/test", "bin/doctor", "bin/cluster-bed", "bin/fuzz",
            "bin/soak", "benchmarks/tpcds.sh", "benchmarks/fetch-benchmark.sh", "benchmarks/jmh.sh", "benchmarks/scale-benchmark.sh");

    @TempDir
    static Path stubs;
    private static Path root;
    private static Path called;

    private record Run(int exit, String out, String err, long millis) {
        /** Standard error's lines, without the JVM's note of JAVA_TOOL_OPTIONS a CI machine may set. */
        List<String> errLines() {
            return err.lines().filter(l -> !l.startsWith("Picked up ")).toList();
        }
    }

    @BeforeAll
    static void stubMavenAndJava() throws IOException {
        root = root();
        called = stubs.resolve("called");
        for (Path dir : List.of(stubs.resolve("bin"), stubs.resolve("jdk/bin"))) {
            Files.createDirectories(dir);
            for (String tool : List.of("mvn", "java", "javac")) {
                Path stub = dir.resolve(tool);
                Files.writeString(stub, "#!/bin/sh\necho \"$0 $*\" >> '" + called + "'\nexit 97\n");
                Files.setPosixFilePermissions(stub, PosixFilePermissions.fromString("rwxr-xr-x"));
            }
        }
    }

    /** Each test sees only the calls its own commands made. */
    @BeforeEach
    void forgetCalls() throws IOException {
        Files.deleteIfExists(called);
    }

    /** Every executable in bin/ and every benchmarks/*.sh, relative to the checkout. */
    static List<String> commands() throws IOException {
        List<String> found = new ArrayList<>();
        try (Stream<Path> bin = Files.list(root().resolve("bin")); Stream<Path> bench = Files.list(root().resolve("benchmarks"))) {
            Stream.concat(bin.filter(Files::isExecutable), bench.filter(p -> p.toString().endsWith(".sh")))
                    .filter(Files::isRegularFile).map(p -> root().relativize(p).toString()).sorted().forEach(found::add);
        }
        return found;
    }

    @Test
    void everyCommandIsFoundHere() throws IOException {
        assertTrue(commands().containsAll(KNOWN), commands().toString());
    }

    @Test
    void helpPrintsTheUsageAndExits0_withoutBuildingOrStartingAnything() throws Exception {
        for (String command : commands()) {
            for (String help : List.of("--help", "-h")) {
                Run r = run(command, help);
                assertEquals(0, r.exit(), command + " " + help + ": " + r);
                assertTrue(r.out().contains(command), command + " " + help + " names itself in its usage: " + r.out());
                assertEquals("", r.err(), command + " " + help);
                assertTrue(r.millis() < 5000, command + " " + help + " took " + r.millis() + " ms");
            }
        }
        assertNothingStarted();
    }

    @Test
    void anUnknownFlagIsRefusedInOneLine_exit2() throws Exception {
        for (String command : commands()) {
            Run r = run(command, "--no-such-flag");
            assertEquals(2, r.exit(), command + ": " + r);
            assertEquals(1, r.errLines().size(), command + ": " + r);
            assertTrue(r.err().startsWith(command + ": ") && r.err().contains("'--no-such-flag'"), command + ": " + r);
            assertEquals("", r.out(), command);
        }
        assertNothingStarted();
    }

    /** A bad value of each kind, per command: one line naming the option and the value, exit 2, nothing built. */
    @Test
    void badValuesAreRefusedInOneLine_namingTheOptionAndTheValue() throws Exception {
        String[][] cases = {
            {"bin/shuffle-job", "--maps", "many"}, {"bin/shuffle-job", "--reducers", "-3"}, {"bin/shuffle-job", "--shuffle", "tcp"},
            {"bin/shuffle-job", "--hosts", "1"}, {"bin/shuffle-job", "--hosts", "3", "--rate", "fast"},
            {"bin/shuffle-job", "--cpu-by-thread"}, {"bin/shuffle-job", "--variant", "busyPoll=0"},
            {"bin/shuffle-job", "--compare", "2", "--shuffle", "both"}, {"bin/shuffle-job", "--job", "terasort"},
            {"bin/shuffle-job", "--job", "sort", "--maps", "4000000"},
            {"bin/terasort-job", "--nodes", "9"}, {"bin/terasort-job", "--rows", "lots"}, {"bin/terasort-job", "--node-mb", "1024"},
            {"bin/terasort-job", "--compare"},
            {"bin/test", "-o"},
            {"bin/doctor", "carrier-pigeon"}, {"bin/doctor", "auto", "[::1"},
            {"bin/cluster-bed", "--hosts", "0", "--hold"}, {"bin/cluster-bed", "--mtu", "9k", "--hold"},
            {"bin/cluster-bed", "--subnet", "10.300.1", "--hold"},
            {"bin/fuzz", "--seconds", "-5"}, {"bin/fuzz", "--module", "hadoop-home"},
            {"bin/soak", "--phase-seconds", "0"}, {"bin/soak", "--attacker-nice", "25"},
            {"benchmarks/tpcds.sh", "--scale", "big"}, {"benchmarks/tpcds.sh", "--queries", "q3;q7"},
            {"benchmarks/tpcds.sh", "--pairs", "-1"}, {"benchmarks/tpcds.sh", "--rounds", "3"},
            {"benchmarks/fetch-benchmark.sh", "--batch", "0"}, {"benchmarks/fetch-benchmark.sh", "2001x256k"},
            {"benchmarks/jmh.sh", "-xyz"},
            {"benchmarks/scale-benchmark.sh", "--peers", "10,0"}, {"benchmarks/scale-benchmark.sh", "--jvms", "four"},
            {"bin/shuffle-job", "--maps"}, {"bin/dist", "--out"},
        };
        for (String[] c : cases) {
            String[] args = java.util.Arrays.copyOfRange(c, 1, c.length);
            Run r = run(c[0], args);
            String what = String.join(" ", c) + ": " + r;
            assertEquals(2, r.exit(), what);
            assertEquals(1, r.errLines().size(), what);
            assertTrue(r.err().startsWith(c[0] + ": "), what);
            String value = args[args.length - 1].equals("--hold") ? args[args.length - 2] : args[args.length - 1];
            assertTrue(r.err().contains(value), what + " names " + value);
            assertFalse(r.err().contains("Exception"), what);
        }
        assertNothingStarted();
    }

    /** The Java mains the scripts start: a bad value is one line on stderr and exit 2, never a stack trace. */
    @Test
    void theJavaMainsRefuseABadValueInOneLine_exit2() throws Exception {
        String[][] cases = {
            {"org.rdmashuffle.benchmarks.spark.ShuffleJob", "--maps", "many"},
            {"org.rdmashuffle.benchmarks.spark.ShuffleJob", "--job", "terasort"},
            {"org.rdmashuffle.benchmarks.cluster.ClusterJob", "--hosts", "3", "--rows", "-1"},
            {"org.rdmashuffle.benchmarks.cluster.TeraSortJob", "--node-mb", "100"},
            {"org.rdmashuffle.benchmarks.tpcds.TpcdsRunner", "--scale", "big"},
            {"org.rdmashuffle.benchmarks.tpcds.TpcdsRunner", "--pairs", "0"},
            {"org.rdmashuffle.benchmarks.tpcds.TpcdsRunner", "--rounds", "3"},
            {"org.rdmashuffle.benchmarks.engine.FetchBenchmark", "--rounds", "0"},
            {"org.rdmashuffle.benchmarks.scale.PeerScaleBenchmark", "--peers", "10,x"},
            {"org.rdmashuffle.benchmarks.soak.HostileTenantSoak", "--attacker-nice", "25"},
        };
        for (String[] c : cases) {
            List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Xmx128m", "-cp", System.getProperty("java.class.path")));
            cmd.addAll(List.of(c));
            Run r = start(cmd, null);
            String what = String.join(" ", c) + ": " + r;
            assertEquals(2, r.exit(), what);
            assertEquals(1, r.errLines().size(), what);
            String program = c[0].substring(c[0].lastIndexOf('.') + 1);
            String line = r.errLines().get(0);
            assertTrue(line.startsWith(program + ": " + c[c.length - 2]) && line.contains(c[c.length - 1]), what);
        }
    }

    private static void assertNothingStarted() throws IOException {
        if (Files.exists(called)) {
            fail("a command started Maven or Java:\n" + Files.readString(called));
        }
    }

    private static Run run(String command, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(root.resolve(command).toString()));
        cmd.addAll(List.of(args));
        return start(cmd, root);
    }

    private static Run start(List<String> cmd, Path dir) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(cmd);
        if (dir != null) {
            pb.directory(dir.toFile());
            pb.environment().put("PATH", stubs.resolve("bin") + ":" + System.getenv().getOrDefault("PATH", "/usr/bin:/bin"));
            pb.environment().put("JAVA_HOME", stubs.resolve("jdk").toString());
        }
        long t0 = System.nanoTime();
        Process p = pb.start();
        p.getOutputStream().close(); // a command that waits for stdin (cluster-bed --hold) sees its end
        CompletableFuture<byte[]> out = CompletableFuture.supplyAsync(() -> readAll(p.getInputStream()));
        CompletableFuture<byte[]> err = CompletableFuture.supplyAsync(() -> readAll(p.getErrorStream()));
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            fail(String.join(" ", cmd) + " did not exit in 60 s");
        }
        long millis = (System.nanoTime() - t0) / 1_000_000;
        return new Run(p.exitValue(), new String(out.join(), StandardCharsets.UTF_8), new String(err.join(), StandardCharsets.UTF_8),
                millis);
    }

    private static byte[] readAll(java.io.InputStream in) {
        try (in) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static Path root() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isDirectory(p.resolve("bin")) && Files.isDirectory(p.resolve("benchmarks"))) {
                return p;
            }
        }
        throw new IllegalStateException("not inside an rdma-shuffle checkout: " + Path.of("").toAbsolutePath());
    }
}
