package org.rdmashuffle.core;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.verbs.VerbsProvider;

/**
 * What engines at rest cost in wake-ups, by their number of peers (issue 52 item 7). One engine is
 * connected both ways to {@code peers} others, each on a software provider of its own: it fetches from
 * each and each fetches from it (so it has {@code peers} fetching and {@code peers} serving data
 * connections, twice as many control connections and {@code peers} links), then all are left idle.
 * Every thread of the plugin in this JVM is counted waking, from {@code /proc}: each time a thread
 * blocks the kernel counts a voluntary context switch, so a thread that sleeps and wakes on a timer
 * counts one per wake-up, and one that blocks until there is work counts none. The plugin's threads are
 * those named {@code rdma-*} (every engine's, Netty's control loops included) and the virtual threads'
 * scheduler (its carriers and its unparker: the software provider's link watcher is a virtual thread);
 * CPU time from {@code schedstat}. Linux only. Test support, and a main to print the figures:
 *
 * <pre>
 *   IdleWakeUps PEERS... (e.g. 1 50)
 * </pre>
 */
final class IdleWakeUps {
    /** The plugin's threads' wake-ups and CPU over a window of rest, by thread group. */
    record Result(int peers, int engines, double seconds, Map<String, Long> wakeUpsByGroup, Map<String, Long> cpuNanosByGroup) {
        long wakeUps() {
            return wakeUpsByGroup.values().stream().mapToLong(Long::longValue).sum();
        }

        double wakeUpsPerSecond() {
            return wakeUps() / seconds;
        }

        double cpuMillis() {
            return cpuNanosByGroup.values().stream().mapToLong(Long::longValue).sum() / 1e6;
        }

        @Override
        public String toString() {
            StringBuilder s = new StringBuilder(String.format("%d peers (%d engines), %.1f s at rest: %d wake-ups of the plugin's "
                    + "threads (%.2f/s), %.2f ms of their CPU%n", peers, engines, seconds, wakeUps(), wakeUpsPerSecond(), cpuMillis()));
            wakeUpsByGroup.forEach((g, n) -> s.append(String.format("  %-24s %6d wake-ups %8.2f ms%n", g, n,
                    cpuNanosByGroup.getOrDefault(g, 0L) / 1e6)));
            return s.toString();
        }
    }

    /** One thread's counters at a moment. */
    private record ThreadCount(String group, long switches, long cpuNanos) {
    }

    private IdleWakeUps() {
    }

    /**
     * Starts one engine and {@code peers} more, connects them both ways by a fetch in each direction,
     * fetches once more (so every connection's idle clock starts together), waits {@code settleMillis},
     * then counts the plugin's threads over {@code windowMillis}. Closes everything.
     */
    static Result measure(Path dir, int peers, long settleMillis, long windowMillis) throws Exception {
        EngineConfig config = EngineTestSupport.smallConfig().set(EngineConfig.KEY_FETCH_BUFFER_MEMORY, "2m")
                .set(EngineConfig.KEY_RECEIVE_BUFFERS, "16").set(EngineConfig.KEY_RECEIVE_LOW_WATER, "2")
                .set(EngineConfig.KEY_SEND_BUFFERS, "8");
        List<VerbsProvider> providers = new ArrayList<>();
        List<RdmaShuffleEngine> engines = new ArrayList<>();
        try {
            for (int i = 0; i <= peers; i++) {
                VerbsProvider p = EngineTestSupport.provider();
                providers.add(p);
                engines.add(RdmaShuffleEngine.start(config, EngineTestSupport.APP, EngineTestSupport.SECRET, p));
            }
            RdmaShuffleEngine hub = engines.get(0);
            List<EngineTestSupport.MapOutput> outputs = new ArrayList<>();
            for (int i = 0; i <= peers; i++) {
                EngineTestSupport.MapOutput o = EngineTestSupport.writeMapOutput(dir, 1, i, new int[] {2000, 3000}, 7 + i);
                engines.get(i).registerMapOutput(1, i, o.file(), o.offsets());
                outputs.add(o);
            }
            for (int round = 0; round < 2; round++) {
                List<Collector> fetches = new ArrayList<>();
                for (int i = 1; i <= peers; i++) {
                    fetches.add(fetch(hub, engines.get(i), outputs.get(i)));
                    fetches.add(fetch(engines.get(i), hub, outputs.get(0)));
                }
                for (Collector c : fetches) {
                    c.await();
                    if (!c.failed.isEmpty()) {
                        throw new AssertionError("a fetch failed", c.failed.values().iterator().next());
                    }
                }
            }
            if (hub.counters().fetchConnections() != peers || hub.counters().servingConnections() != peers) {
                throw new AssertionError("the engine is not connected both ways to its " + peers + " peers: " + hub.counters());
            }
            Thread.sleep(settleMillis);
            Map<Long, ThreadCount> before = pluginThreads();
            long start = System.nanoTime();
            Thread.sleep(windowMillis);
            Map<Long, ThreadCount> after = pluginThreads();
            double seconds = (System.nanoTime() - start) / 1e9;
            Map<String, Long> wakeUps = new TreeMap<>();
            Map<String, Long> cpu = new TreeMap<>();
            after.forEach((tid, now) -> {
                ThreadCount then = before.get(tid);
                long switches = now.switches() - (then == null ? 0 : then.switches());
                long used = now.cpuNanos() - (then == null ? 0 : then.cpuNanos());
                if (switches > 0 || used > 0) {
                    wakeUps.merge(now.group(), switches, Long::sum);
                    cpu.merge(now.group(), used, Long::sum);
                }
            });
            return new Result(peers, engines.size(), seconds, wakeUps, cpu);
        } finally {
            for (RdmaShuffleEngine e : engines) {
                e.close();
            }
            providers.forEach(EngineTestSupport::closeProvider);
        }
    }

    private static Collector fetch(RdmaShuffleEngine from, RdmaShuffleEngine server, EngineTestSupport.MapOutput o) {
        BlockId b = BlockId.of(o.shuffleId(), o.mapId(), 1);
        Collector got = new Collector(1);
        from.fetchBlocks(server.address(), List.of(b), got);
        return got;
    }

    /** Whether a thread (by its name as the kernel keeps it: 15 characters) is the plugin's. */
    static boolean isPlugins(String comm) {
        return comm.startsWith("rdma-") || comm.startsWith("ForkJoinPool-") || comm.startsWith("VirtualThread-");
    }

    /** A thread's group: its name without the numbers that tell a pool's threads apart. */
    static String group(String comm) {
        return comm.replaceAll("[#-]?\\d+$", "").replaceAll("[#-]\\d+[#-]", "-").trim();
    }

    /** Every live thread of the plugin in this process, by kernel thread id. */
    private static Map<Long, ThreadCount> pluginThreads() throws IOException {
        Map<Long, ThreadCount> out = new HashMap<>();
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc/self/task"))) {
            for (Path task : tasks) {
                try {
                    String comm = Files.readString(task.resolve("comm"), StandardCharsets.US_ASCII).trim();
                    if (!isPlugins(comm)) {
                        continue;
                    }
                    long switches = 0;
                    for (String line : Files.readAllLines(task.resolve("status"), StandardCharsets.US_ASCII)) {
                        if (line.startsWith("voluntary_ctxt_switches:")) { // not preemptions: the machine's load, not ours
                            switches = Long.parseLong(line.substring(line.indexOf(':') + 1).trim());
                        }
                    }
                    String schedstat = Files.readString(task.resolve("schedstat"), StandardCharsets.US_ASCII).trim();
                    long cpu = Long.parseLong(schedstat.substring(0, schedstat.indexOf(' ')));
                    out.put(Long.parseLong(task.getFileName().toString()), new ThreadCount(group(comm), switches, cpu));
                } catch (IOException ended) {
                    // the thread ended between listing and reading
                }
            }
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        for (String a : args) {
            Path dir = Files.createTempDirectory("idle-wake-ups");
            System.out.print(measure(dir, Integer.parseInt(a), 1000, 4000));
        }
    }
}
