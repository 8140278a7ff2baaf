package org.rdmashuffle.hadoop;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

/**
 * Prometheus' own {@code promtool} (Debian's {@code prometheus} package; .ci/run installs it): the real
 * parser of the text format and of rules files, not a regex of ours. Where it is missing a test is
 * skipped saying so, except under {@code CI=true}, where it fails.
 */
final class Promtool {
    private Promtool() {
    }

    /** promtool's path; skips (fails under CI=true) where it is not installed. */
    static Path require() {
        List<Path> candidates = new ArrayList<>(List.of(Path.of("/usr/bin/promtool")));
        String path = System.getenv("PATH");
        if (path != null) {
            for (String d : path.split(":")) {
                candidates.add(Path.of(d, "promtool"));
            }
        }
        for (Path p : candidates) {
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        String why = "promtool is not installed (Debian's prometheus package: apt-get install prometheus)";
        if ("true".equals(System.getenv("CI"))) {
            Assertions.fail(why + "; under CI=true this fails rather than skips (.ci/run installs it)");
        }
        Assumptions.abort(why + ": skipped here; under CI=true it fails");
        throw new AssertionError("unreachable");
    }

    record Result(int exit, String output) {
    }

    /** Runs {@code promtool args...} with {@code stdin} (null: none) in {@code dir}; its exit code and its output (both streams). */
    static Result run(Path dir, String stdin, String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(require().toString());
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
        if (stdin == null) {
            pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        }
        Process p = pb.start();
        if (stdin != null) {
            try (var in = p.getOutputStream()) {
                in.write(stdin.getBytes(StandardCharsets.UTF_8));
            }
        }
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            Assertions.fail("promtool " + String.join(" ", args) + " did not end in 60 s");
        }
        return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
    }
}
