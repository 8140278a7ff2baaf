package org.rdmashuffle.benchmarks.cluster;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * What a driver prints on its standard output, read as it comes on a thread of its own (so a driver
 * never blocks on a full pipe), kept, and optionally echoed; a caller can wait for a line that starts
 * with a given text (the job saying it waits for something to be done to the cluster).
 */
public final class DriverOutput {
    private final List<String> lines = new ArrayList<>();
    private final CountDownLatch seen = new CountDownLatch(1);
    private final Thread pump;
    private volatile boolean awaitedSeen;

    /**
     * @param echo where each line is echoed as it comes, or null
     * @param awaited the start of the line {@link #awaitLine} waits for, or null
     */
    public DriverOutput(Process driver, PrintStream echo, String awaited) {
        BufferedReader out = new BufferedReader(new InputStreamReader(driver.getInputStream(), StandardCharsets.UTF_8));
        pump = Thread.ofVirtual().start(() -> {
            try (out) {
                for (String line = out.readLine(); line != null; line = out.readLine()) {
                    synchronized (lines) {
                        lines.add(line);
                    }
                    if (echo != null) {
                        echo.println(line);
                    }
                    if (awaited != null && line.startsWith(awaited)) {
                        awaitedSeen = true;
                        seen.countDown();
                    }
                }
            } catch (IOException e) {
                if (echo != null) {
                    echo.println("(driver output broke off: " + e.getMessage() + ")");
                }
            } finally {
                seen.countDown(); // the driver ended: nothing more to wait for
            }
        });
    }

    /** Whether the awaited line came (false if the driver ended first or {@code minutes} passed). */
    public boolean awaitLine(long minutes) throws InterruptedException {
        return seen.await(minutes, TimeUnit.MINUTES) && awaitedSeen;
    }

    /** Waits (bounded) until the driver's output has ended, after the driver exited. */
    public void join(long seconds) throws InterruptedException {
        pump.join(TimeUnit.SECONDS.toMillis(seconds));
    }

    /** The lines so far. */
    public List<String> lines() {
        synchronized (lines) {
            return List.copyOf(lines);
        }
    }
}
