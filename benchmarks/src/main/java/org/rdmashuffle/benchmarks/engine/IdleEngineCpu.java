package org.rdmashuffle.benchmarks.engine;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;

import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.client.BlockFetchListener;
import org.rdmashuffle.core.client.FetchedBlock;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.protocol.BlockId;

/**
 * What an idle engine costs: two engines on this machine's default provider, connected by one fetch,
 * then left idle; prints the CPU each kind of thread used over the idle window and the process's.
 * An idle engine's threads should block (issue 37: on a small shared machine every timed wake-up
 * costs the tasks CPU).
 *
 * <pre>
 *   IdleEngineCpu SECONDS
 * </pre>
 */
public final class IdleEngineCpu {
    public static void main(String[] args) throws Exception {
        int seconds = Integer.parseInt(args[0]);
        EngineConfig c = EngineConfig.defaults().set(EngineConfig.KEY_FETCH_BUFFER_MEMORY, "32m").set(EngineConfig.KEY_BIND_ADDRESS, "127.0.0.1");
        byte[] secret = "0123456789abcdef0123456789abcdef".getBytes();
        Path dir = Files.createTempDirectory("idle-engine-cpu");
        Path data = dir.resolve("map.data");
        Files.write(data, new byte[4096 * 4]);
        try (RdmaShuffleEngine server = RdmaShuffleEngine.start(c, "app-1", secret);
             RdmaShuffleEngine client = RdmaShuffleEngine.start(c, "app-1", secret)) {
            server.registerMapOutput(0, 0, data, new long[] {0, 4096, 8192, 12288, 16384});
            List<BlockId> blocks = new ArrayList<>();
            for (int p = 0; p < 4; p++) blocks.add(BlockId.of(0, 0, p));
            CountDownLatch done = new CountDownLatch(blocks.size());
            client.fetchBlocks(server.address(), blocks, new BlockFetchListener() {
                public void onBlockFetched(FetchedBlock b) { b.release(); done.countDown(); }
                public void onBlockFetchFailure(BlockId b, Throwable t) { t.printStackTrace(); done.countDown(); }
            });
            done.await();
            Thread.sleep(3000);
            ThreadMXBean mx = ManagementFactory.getThreadMXBean();
            Map<Long, Long> before = new TreeMap<>();
            for (long id : mx.getAllThreadIds()) before.put(id, mx.getThreadCpuTime(id));
            var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
            long p0 = os.getProcessCpuTime();
            long t0 = System.nanoTime();
            Thread.sleep(seconds * 1000L);
            double wall = (System.nanoTime() - t0) / 1e9;
            long process = os.getProcessCpuTime() - p0;
            Map<String, Long> byName = new TreeMap<>();
            long total = 0;
            for (long id : mx.getAllThreadIds()) {
                var info = mx.getThreadInfo(id);
                if (info == null || !before.containsKey(id) || id == Thread.currentThread().threadId()) continue;
                long used = mx.getThreadCpuTime(id) - before.get(id);
                String name = info.getThreadName().replaceAll("[0-9]+", "#");
                byName.merge(name, used, Long::sum);
                total += used;
            }
            System.out.printf("two connected engines idle for %.1f s: %.1f ms of thread CPU (platform threads), %.1f ms of process CPU%n", wall, total / 1e6, process / 1e6);
            byName.entrySet().stream().filter(e -> e.getValue() > 100_000).forEach(e -> System.out.printf("  %-40s %8.2f ms%n", e.getKey(), e.getValue() / 1e6));
        }
    }
}
