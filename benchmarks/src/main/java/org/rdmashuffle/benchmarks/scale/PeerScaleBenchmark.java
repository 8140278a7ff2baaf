package org.rdmashuffle.benchmarks.scale;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.rdmashuffle.benchmarks.CommandLine;
import org.rdmashuffle.core.EngineCounters;
import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.config.EngineConfig;

/**
 * How a serving engine's process grows with the number of peers it serves (issues 18, 52): this JVM runs
 * one engine on the software provider serving one map output; after an unreported warm-up round, for
 * each peer count, child JVMs ({@link ScalePeers}, each on a loopback address of its own) start that
 * many fetching engines, each a distinct peer; once all are started they fetch every partition at once
 * and stay connected. With every peer connected and idle, this JVM reports its live platform threads,
 * heap after a full GC, direct memory, native memory (NMT, run with
 * {@code -XX:NativeMemoryTracking=summary}), RSS, the engine's registered bytes and connections, what
 * grew by NMT category and by class ({@link ServingJvm}), the peers' set-up times and rate, and the
 * slope per added peer between rounds; then the peers leave and what the serving JVM holds again is
 * reported (it should be what it held before: nothing per peer may stay).
 *
 * <pre>PeerScaleBenchmark [--peers 10,100,400] [--jvms 4]</pre>
 */
public final class PeerScaleBenchmark {
    static final String APP = "app-scale-benchmark";
    static final byte[] SECRET = "scale-benchmark-secret".getBytes(StandardCharsets.UTF_8);
    static final int SHUFFLE = 0;
    static final long MAP = 1;
    static final int PARTITIONS = 8;
    private static final int PARTITION_BYTES = 4096;
    /** Peers of the unreported first round. */
    static final int WARM_UP = 20;

    private PeerScaleBenchmark() {
    }

    /** What one partition of the served output holds. */
    static byte[] partition(int p) {
        byte[] b = new byte[PARTITION_BYTES];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) (p * 31 + i);
        }
        return b;
    }

    /**
     * The serving JVM's state at one moment, after two full GCs.
     *
     * @param rssBytes   the process's resident set (/proc/self/status VmRSS)
     * @param nmtNative  what Native Memory Tracking counts committed outside the Java heap (metaspace, thread
     *                   stacks, code, GC, and every malloc: direct buffers and the engine's native segments
     *                   among them), or -1 when the JVM runs without NMT
     * @param links      the software provider's TCP connections (one per peer device, whatever its QP count)
     */
    public record Snapshot(int platformThreads, long heapBytes, long directBytes, long rssBytes, long nmtNative,
            EngineCounters engine, int links) {
        public static Snapshot take(RdmaShuffleEngine e) throws InterruptedException {
            for (int i = 0; i < 2; i++) {
                System.gc();
                Thread.sleep(200);
            }
            long direct = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
                    .filter(b -> b.getName().equals("direct")).mapToLong(BufferPoolMXBean::getMemoryUsed).sum();
            return new Snapshot(ManagementFactory.getThreadMXBean().getThreadCount(),
                    ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed(), direct, ServingJvm.residentBytes(),
                    ServingJvm.nativeCommittedOutsideHeap(), e.counters(),
                    org.rdmashuffle.verbs.software.SoftwareProvider.instance().openLinks());
        }

        /** Heap after GC plus NMT's native (direct buffers are in the native figure); without NMT, heap + direct. */
        long heapAndNative() {
            return heapBytes + (nmtNative < 0 ? directBytes : nmtNative);
        }
    }

    /** One round: the serving JVM with every peer connected and idle, then after they left. */
    public record Result(int peers, Snapshot connected, Snapshot afterwards, long[] setUpMillis, long setUpWindowMillis,
            String nativeGrowth, String heapHistogram) {
        /** Peers set up per second: all of them over the time from the first one's asking to the last one's last block. */
        double setUpRate() {
            return peers * 1000.0 / Math.max(1, setUpWindowMillis);
        }
    }

    /** Its command line: the peer counts of the rounds, and how many JVMs the peers of a round spread over. */
    record Options(int[] peerCounts, int jvms) {
        /** Parses and checks the command line; a bad argument is an IllegalArgumentException naming it. */
        static Options parse(String... args) {
            int[] peerCounts = {10, 100, 400};
            int jvms = 4;
            for (int i = 0; i < args.length; i++) {
                String option = args[i];
                switch (option) {
                    case "--peers" -> {
                        String list = CommandLine.value(args, ++i, option);
                        peerCounts = Arrays.stream(list.split(",", -1)).mapToInt(n -> {
                            try {
                                return CommandLine.atLeast(option, n, 1);
                            } catch (IllegalArgumentException e) {
                                throw new IllegalArgumentException(option + " takes counts of at least 1 such as 10,100,400, not '"
                                        + list + "'");
                            }
                        }).toArray();
                    }
                    case "--jvms" -> jvms = CommandLine.wholeNumber(option, CommandLine.value(args, ++i, option), 1, 62_500);
                    default -> throw new IllegalArgumentException("unknown argument " + option
                            + " (usage: PeerScaleBenchmark [--peers 10,100,400] [--jvms 4])");
                }
            }
            return new Options(peerCounts, jvms);
        }
    }

    public static void main(String[] args) throws Exception {
        Options o = CommandLine.parseOrExit("PeerScaleBenchmark", () -> Options.parse(args));
        int[] peerCounts = o.peerCounts();
        int jvms = o.jvms();
        Path dir = Files.createTempDirectory("rdma-shuffle-scale");
        try (RdmaShuffleEngine server = startServer(dir, Arrays.stream(peerCounts).max().orElse(0))) {
            // A round of WARM_UP peers first, not reported: the classes a served peer needs are loaded and the
            // code compiled before "no peer" is measured, so growth from it is what peers hold, not warm-up.
            round(server, WARM_UP, 1, Map.of());
            Snapshot idle = Snapshot.take(server);
            System.out.printf("serving JVM with its engine and no peer (after a warm-up round of %d): ", WARM_UP);
            System.out.printf("%d platform threads, heap %.1f MiB, direct %.1f MiB, "
                    + "native (NMT, outside the heap) %.1f MiB, RSS %.1f MiB%n", idle.platformThreads(), mib(idle.heapBytes()),
                    mib(idle.directBytes()), mib(idle.nmtNative()), mib(idle.rssBytes()));
            ServingJvm.nativeBaseline();
            Map<String, long[]> idleHistogram = ServingJvm.classHistogram();
            List<Result> results = new ArrayList<>();
            for (int peers : peerCounts) {
                Result r = round(server, peers, Math.min(jvms, peers), idleHistogram);
                results.add(r);
                System.out.println();
                System.out.printf("round of %d peers: native memory (NMT) grown since the engine alone, with every peer connected:%n%s",
                        peers, r.nativeGrowth());
                System.out.printf("round of %d peers: live heap grown since the engine alone, by class (top 15):%n%s", peers,
                        r.heapHistogram());
            }
            System.out.println();
            System.out.println("| peers | serving connections | TCP connections | platform threads | heap MiB | direct MiB "
                    + "| native (NMT) MiB | RSS MiB | registered KiB | heap + native per peer, KiB | set-up rate, peers/s "
                    + "| set-up ms p50 / p99 / max | after the peers left: threads, connections, heap MiB, native MiB |");
            System.out.println("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
            for (Result r : results) {
                Snapshot s = r.connected();
                Snapshot a = r.afterwards();
                long[] ms = r.setUpMillis();
                System.out.printf("| %d | %d | %d | %d | %.1f | %.1f | %.1f | %.1f | %d | %d | %.0f | %d / %d / %d | %d, %d, %.1f, %.1f |%n",
                        r.peers(), s.engine().servingConnections(), s.links(), s.platformThreads(), mib(s.heapBytes()),
                        mib(s.directBytes()), mib(s.nmtNative()), mib(s.rssBytes()), s.engine().registeredMapOutputBytes() / 1024,
                        (s.heapAndNative() - idle.heapAndNative()) / r.peers() / 1024, r.setUpRate(), percentile(ms, 50),
                        percentile(ms, 99), ms[ms.length - 1], a.platformThreads(), a.engine().servingConnections(),
                        mib(a.heapBytes()), mib(a.nmtNative()));
            }
            System.out.println();
            System.out.println("Per peer, as the slope between two peer counts (bytes per added peer):");
            System.out.println("| from - to peers | heap | direct | native (NMT) | heap + native | RSS | platform threads |");
            System.out.println("|---|---|---|---|---|---|---|");
            int previousPeers = 0;
            Snapshot previous = idle;
            for (Result r : results) {
                Snapshot s = r.connected();
                int added = r.peers() - previousPeers;
                if (added > 0) {
                    System.out.printf("| %d - %d | %d | %d | %d | %d | %d | %+d |%n", previousPeers, r.peers(),
                            (s.heapBytes() - previous.heapBytes()) / added, (s.directBytes() - previous.directBytes()) / added,
                            (s.nmtNative() - previous.nmtNative()) / added, (s.heapAndNative() - previous.heapAndNative()) / added,
                            (s.rssBytes() - previous.rssBytes()) / added, s.platformThreads() - previous.platformThreads());
                }
                previousPeers = r.peers();
                previous = s;
            }
        } finally {
            deleteOutput(dir);
        }
    }

    private static double mib(long bytes) {
        return bytes / 1048576.0;
    }

    /**
     * The serving engine, its one map output written into {@code dir}, with the caps an operator sets for
     * a process serving {@code mostPeers} peers (defaults: 1,024 connections, 512 per application).
     */
    public static RdmaShuffleEngine startServer(Path dir, int mostPeers) throws java.io.IOException {
        Path data = dir.resolve("map.data");
        long[] offsets = new long[PARTITIONS + 1];
        try (var out = Files.newOutputStream(data)) {
            for (int p = 0; p < PARTITIONS; p++) {
                out.write(partition(p));
                offsets[p + 1] = offsets[p] + PARTITION_BYTES;
            }
        }
        EngineConfig config = EngineConfig.defaults().set(EngineConfig.KEY_PROVIDER, "software")
                .set(EngineConfig.KEY_BIND_ADDRESS, "127.0.0.1")
                .set(EngineConfig.KEY_MAX_SERVED_CONNECTIONS, Integer.toString(Math.max(1024, 2 * mostPeers)))
                .set(EngineConfig.KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION, Integer.toString(Math.max(512, 2 * mostPeers)));
        RdmaShuffleEngine server = RdmaShuffleEngine.start(config, APP, SECRET);
        server.registerMapOutput(SHUFFLE, MAP, data, offsets);
        return server;
    }

    public static void deleteOutput(Path dir) throws java.io.IOException {
        Files.deleteIfExists(dir.resolve("map.data"));
        Files.deleteIfExists(dir);
    }

    /**
     * Starts {@code peers} fetching engines in {@code jvms} child JVMs, each JVM's on a loopback address of
     * its own; returns once each has fetched and checked every partition, the serving JVM has been measured,
     * and the peers have left again.
     */
    public static Result round(RdmaShuffleEngine server, int peers, int jvms, Map<String, long[]> idleHistogram) throws Exception {
        List<Process> children = new ArrayList<>();
        List<PrintWriter> inputs = new ArrayList<>();
        List<Long> setUps = new ArrayList<>();
        long firstAsk = Long.MAX_VALUE;
        long lastBlock = 0;
        try {
            for (int j = 0; j < jvms; j++) {
                int count = peers / jvms + (j < peers % jvms ? 1 : 0);
                Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-Xmx" + peerJvmHeapMib(count) + "m", "-Xss256k", "-XX:+UseSerialGC", "-XX:MinHeapFreeRatio=10", "-XX:MaxHeapFreeRatio=30", "-XX:TieredStopAtLevel=1",
                        "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
                        "-cp", System.getProperty("java.class.path"),
                        ScalePeers.class.getName(), Integer.toString(server.address().getPort()), Integer.toString(count),
                        peerAddress(j))
                        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
                children.add(p);
                inputs.add(new PrintWriter(p.getOutputStream(), true, StandardCharsets.UTF_8));
            }
            List<BufferedReader> outputs = new ArrayList<>();
            for (Process p : children) {
                BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
                outputs.add(out);
                awaitLine(out, p, "STARTED ");
            }
            inputs.forEach(in -> in.println("go"));
            for (int j = 0; j < children.size(); j++) {
                String line = awaitLine(outputs.get(j), children.get(j), "CONNECTED ");
                long[] fields = Arrays.stream(line.split(" ")).skip(2).mapToLong(Long::parseLong).toArray();
                firstAsk = Math.min(firstAsk, fields[0]);
                lastBlock = Math.max(lastBlock, fields[1]);
                Arrays.stream(fields).skip(2).forEach(setUps::add);
            }
            Snapshot connected = Snapshot.take(server);
            String nativeGrowth = ServingJvm.nativeGrowth();
            String heapHistogram = ServingJvm.histogramGrowth(idleHistogram, ServingJvm.classHistogram(), peers, 15);
            long[] ms = setUps.stream().mapToLong(Long::longValue).sorted().toArray();
            if (ms.length != peers) {
                throw new IllegalStateException(ms.length + " of " + peers + " peers reported their set-up");
            }
            inputs.forEach(in -> in.println("exit"));
            for (Process p : children) {
                if (!p.waitFor(5, TimeUnit.MINUTES)) {
                    p.destroyForcibly();
                }
            }
            return new Result(peers, connected, awaitPeersGone(server), ms, lastBlock - firstAsk, nativeGrowth, heapHistogram);
        } finally {
            children.forEach(Process::destroyForcibly);
        }
    }

    /** The first line of a peer JVM's output that starts with {@code prefix}; fails if the JVM ends first. */
    private static String awaitLine(BufferedReader out, Process p, String prefix) throws java.io.IOException, InterruptedException {
        String line = out.readLine();
        while (line != null && !line.startsWith(prefix)) {
            line = out.readLine();
        }
        if (line == null) {
            throw new IllegalStateException("a peer JVM exited before it printed " + prefix.strip() + " (exit " + p.waitFor()
                    + "; its standard error says why)");
        }
        return line;
    }

    /**
     * The loopback address the peers of child JVM {@code j} bind to (127.1.0.1, 127.1.0.2, ...): each peer
     * listens on two ports, and one address has 28,232 ephemeral ports, so 10,000 peers must not share one.
     */
    static String peerAddress(int j) {
        return "127.1." + (j / 250) + "." + (j % 250 + 1);
    }

    /** A peer JVM's heap: what its engines were seen to need (a few hundred KiB of live heap each, more while it starts), with room. */
    static int peerJvmHeapMib(int peersInJvm) {
        return 96 + peersInJvm;
    }

    /** Waits (at most three minutes) until the serving engine has let every peer's connection go. */
    private static Snapshot awaitPeersGone(RdmaShuffleEngine server) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
        while (server.counters().servingConnections() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        return Snapshot.take(server);
    }

    private static long percentile(long[] sorted, int p) {
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p / 100.0 * sorted.length) - 1)];
    }
}
