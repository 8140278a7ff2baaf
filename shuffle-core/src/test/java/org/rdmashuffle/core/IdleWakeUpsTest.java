package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Nothing at rest, whatever the number of peers (issue 52 item 7): engines connected both ways and
 * idle wake none of the plugin's threads, with one peer or fifty ({@link IdleWakeUps}: counted from
 * {@code /proc}, every engine's threads and the virtual threads' scheduler). Before the timers became
 * deadlines and the waits untimed (2026-12-03): 8.5 wake-ups a second with one peer, 212.8 with fifty
 * (docs/benchmarks.md, "Nothing at rest, with one peer or fifty").
 */
class IdleWakeUpsTest {
    /** Wake-ups a second, all engines' threads together, below which the plugin is at rest: less than one. */
    private static final double AT_REST_PER_SECOND = 1.0;

    @TempDir
    Path dir;

    @Test
    void enginesAtRestWakeNoThreadWithOnePeerOrFifty() throws Exception {
        IdleWakeUps.Result one = IdleWakeUps.measure(Files.createDirectories(dir.resolve("one")), 1, 1000, 4000);
        System.out.print(one);
        IdleWakeUps.Result fifty = IdleWakeUps.measure(Files.createDirectories(dir.resolve("fifty")), 50, 1000, 4000);
        System.out.print(fifty);
        assertTrue(one.wakeUpsPerSecond() < AT_REST_PER_SECOND, "two engines at rest:\n" + one);
        assertTrue(fifty.wakeUpsPerSecond() < AT_REST_PER_SECOND, "51 engines at rest, one connected to 50:\n" + fifty);
    }
}
