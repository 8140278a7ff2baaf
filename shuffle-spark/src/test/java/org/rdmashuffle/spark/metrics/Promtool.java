package org.rdmashuffle.spark.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;

/**
 * Prometheus' own linter, {@code promtool check metrics} (Debian's {@code prometheus} package): it parses the
 * text format with Prometheus' parser and checks every name against Prometheus' naming rules (counters end
 * {@code _total}, units as suffixes, base units, no type in the name, snake case). A test that needs it is
 * skipped, saying why, where promtool is missing, except under {@code CI=true}, where it fails (.ci/run
 * installs it).
 */
public final class Promtool {
    private Promtool() {
    }

    /** promtool on the PATH (or /usr/bin/promtool); skips or, under CI=true, fails without it. */
    static Path find() {
        for (String dir : (System.getenv().getOrDefault("PATH", "") + ":/usr/bin").split(":")) {
            Path p = Path.of(dir.isEmpty() ? "." : dir, "promtool");
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        String why = "promtool is not installed (Debian: apt-get install prometheus): the exposition's names are not linted";
        assertTrue(!"true".equals(System.getenv("CI")), why + ", and CI=true requires it");
        Assumptions.abort(why);
        throw new AssertionError("unreachable");
    }

    /** Lints {@code exposition}: fails with promtool's findings unless it finds none. */
    public static void checkMetrics(String exposition) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(find().toString(), "check", "metrics").redirectErrorStream(true).start();
        try (var in = p.getOutputStream()) {
            in.write(exposition.getBytes(StandardCharsets.UTF_8));
        }
        String said = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "promtool check metrics did not end");
        assertEquals(0, p.exitValue(), "promtool check metrics found: " + said + "\nin:\n" + exposition);
        assertEquals("", said.strip(), "promtool check metrics said: " + said);
    }
}
