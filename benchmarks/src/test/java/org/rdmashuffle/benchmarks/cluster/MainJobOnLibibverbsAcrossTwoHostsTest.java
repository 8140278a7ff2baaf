package org.rdmashuffle.benchmarks.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.rdmashuffle.benchmarks.spark.MainJobRows;

/**
 * The README's main job on Spark's standalone cluster across the two Soft-RoCE guests of
 * {@code guest-tests.sh --pair}, on the real libibverbs ({@code spark.shuffle.rdma.provider=ibverbs}):
 * the Master and one Worker run on the other host (started there by pair-tests.sh), this test starts
 * the second Worker on this host and submits the job in client mode from here, both shuffles one
 * after the other. Everything is started by {@code softroce/spark-standalone.sh} from
 * the kit the host made ({@code ClusterKit}, AOT caches included).
 *
 * <p>Needs {@code rdmashuffle.test.sparkKit} (the kit), {@code rdmashuffle.test.sparkMaster} (the
 * Master's URL) and {@code rdmashuffle.test.bindAddress} (this host's address on the wire); skipped
 * without them, naming the command that runs it.
 */
class MainJobOnLibibverbsAcrossTwoHostsTest {
    private static final long WORKER_SECONDS = 600;
    private static final long JOB_MINUTES = 30;
    private static final int ROWS = 20_000;
    private static final int MAPS = 4;

    @Test
    void theMainJobAcrossTwoRxeHosts_givesTheExpectedResult_andEveryRemoteBlockComesOverLibibverbs() throws Exception {
        String kit = System.getProperty("rdmashuffle.test.sparkKit");
        String master = System.getProperty("rdmashuffle.test.sparkMaster");
        String address = System.getProperty("rdmashuffle.test.bindAddress");
        Assumptions.assumeTrue(kit != null && master != null && address != null,
                "needs Spark's Master on another host with an rxe device: run softroce/guest-tests.sh --pair");
        Path script = Repository.root().resolve("softroce/spark-standalone.sh");
        Path logs = Files.createDirectories(Path.of(System.getProperty("rdmashuffle.test.logDir",
                System.getProperty("java.io.tmpdir"))).resolve("spark-" + address));
        awaitMaster(URI.create(master));
        Path workerLog = logs.resolve("worker.log");
        Process worker = new ProcessBuilder("bash", script.toString(), kit, "worker", address, master)
                .redirectErrorStream(true).redirectOutput(workerLog.toFile()).start();
        try {
            awaitRegistration(worker, workerLog);
            Path driverLog = logs.resolve("driver.log");
            Process driver = new ProcessBuilder("bash", script.toString(), kit, "submit", address, master, "ibverbs",
                    "--rows", Integer.toString(ROWS), "--partitions", Integer.toString(MAPS), "--executors", "2", "--shuffle", "rdma",
                    // Host 1 starts YARN's daemons meanwhile: an executor's start there took over 120 s once.
                    "--executor-wait", "600")
                    .redirectError(driverLog.toFile()).start();
            driver.getOutputStream().close();
            // Read on the side, so a driver that hangs cannot hold the test past its bound.
            CompletableFuture<byte[]> out = CompletableFuture.supplyAsync(() -> {
                try (InputStream in = driver.getInputStream()) {
                    return in.readAllBytes();
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }, Thread::startVirtualThread);
            if (!driver.waitFor(JOB_MINUTES, TimeUnit.MINUTES)) {
                driver.descendants().forEach(ProcessHandle::destroyForcibly);
                driver.destroyForcibly();
                fail("the driver did not finish in " + JOB_MINUTES + " minutes" + tail(driverLog));
            }
            String printed = new String(out.get(60, TimeUnit.SECONDS), StandardCharsets.UTF_8);
            System.out.println(printed);
            assertEquals(0, driver.exitValue(), "the driver failed:\n" + printed + tail(driverLog));
            MainJobOutput job = MainJobOutput.parseSingle(printed.lines().toList());
            // The RDMA run alone: a built-in round beside it would double the emulated guests' minutes and
            // prove nothing the host bed's rounds do not. Its result is checked against the job's result
            // computed without Spark (itself checked against both shuffles' on the bed: MainJobAcrossHostsTest).
            assertEquals(MainJobRows.expectedResult(ROWS, MAPS), job.rounds().getFirst().result(), printed);
            job.assertEveryRemoteBlockOverRdma(2, "ibverbs", printed);
            assertTrue(job.rounds().stream().flatMap(r -> r.executors().stream()).anyMatch(e -> e.address().equals(address)),
                    "an executor ran on this host: " + printed);
        } finally {
            worker.destroy(); // the Worker stops its executors on TERM
            if (!worker.waitFor(60, TimeUnit.SECONDS)) {
                worker.descendants().forEach(ProcessHandle::destroyForcibly);
                worker.destroyForcibly();
            }
        }
    }

    /** The other host starts its Master while this one runs other tests: wait for its port (bounded). */
    private static void awaitMaster(URI master) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WORKER_SECONDS);
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(master.getHost(), master.getPort()), 2000);
                return;
            } catch (IOException e) {
                if (System.nanoTime() > deadline) {
                    fail("Spark's Master at " + master + " did not listen within " + WORKER_SECONDS + " s: " + e);
                }
                Thread.sleep(1000);
            }
        }
    }

    private static void awaitRegistration(Process worker, Path log) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WORKER_SECONDS);
        while (!Files.readString(log).contains("Successfully registered with master")) {
            if (!worker.isAlive()) {
                fail("the Worker exited (status " + worker.exitValue() + ") before registering" + tail(log));
            }
            if (System.nanoTime() > deadline) {
                fail("the Worker did not register with the Master in " + WORKER_SECONDS + " s" + tail(log));
            }
            Thread.sleep(500);
        }
    }

    private static String tail(Path log) throws IOException {
        if (!Files.exists(log)) {
            return "";
        }
        List<String> lines = Files.readAllLines(log);
        List<String> last = new ArrayList<>(lines.subList(Math.max(0, lines.size() - 30), lines.size()));
        return "\n--- last lines of " + log + ":\n" + String.join("\n", last);
    }
}
