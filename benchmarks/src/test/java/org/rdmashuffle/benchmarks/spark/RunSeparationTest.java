package org.rdmashuffle.benchmarks.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/** How a run finds its application's executors: by command line, read whole however long it is. */
class RunSeparationTest {
    @Test
    void anExecutorIsItsApplicationsOnly() {
        String line = "java -cp x org.apache.spark.executor.CoarseGrainedExecutorBackend --driver-url d --executor-id 1 "
                + "--app-id app-20261203-0001 --resourcesFile f";
        assertTrue(RunSeparation.isExecutorOf(line, "app-20261203-0001"));
        assertFalse(RunSeparation.isExecutorOf(line, "app-20261203-000"));
        assertTrue(RunSeparation.isExecutorOf("java YarnCoarseGrainedExecutorBackend --app-id a-1", "a-1"));
        assertFalse(RunSeparation.isExecutorOf("java Worker --app-id a-1", "a-1"));
    }

    /** An executor whose --app-id comes after 8,000 bytes of class path (local-cluster's): found, where the JDK's view stops short. */
    @Test
    void anExecutorWithALongClassPath_isFound() throws Exception {
        String classPath = "/a".repeat(4_000);
        String app = "app-test-" + ProcessHandle.current().pid();
        // sh stays (two commands: no exec), its arguments as an executor's would be.
        Process p = new ProcessBuilder("sh", "-c", "sleep 30; true", "-cp", classPath,
                "org.apache.spark.executor.CoarseGrainedExecutorBackend", "--app-id", app).start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            List<ProcessHandle> found = RunSeparation.executorsOf(app);
            while (found.isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(50);
                found = RunSeparation.executorsOf(app);
            }
            assertEquals(List.of(p.pid()), found.stream().map(ProcessHandle::pid).toList());
            assertFalse(p.toHandle().info().commandLine().orElse("").contains(app), "the JDK's view reaches --app-id now: "
                    + "RunSeparation.commandLine's reason is gone");
        } finally {
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
