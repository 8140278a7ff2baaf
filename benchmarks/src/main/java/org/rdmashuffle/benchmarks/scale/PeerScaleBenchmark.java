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
import java.util.concurrent.TimeUnit;

import org.rdmashuffle.benchmarks.CommandLine;
import org.rdmashuffle.core.EngineCounters;
import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.config.EngineConfig;

/**
 * How a serving engine's process grows with the number of peers it serves (issue 18): this JVM runs
 * one engine on the software provider serving one map output; for each peer count, child JVMs
 * ({@link ScalePeers}) start that many fetching engines, each a distinct peer, and each fetches every
 * partition once and stays connected. With every peer connected and idle, this JVM reports its live
 * platform threads, heap after a full GC, direct memory, the engine's registered map-output bytes and
 * connections, and the peers' connection set-up times; then the peers leave and what the serving JVM
 * holds again is reported (it should be what it held before: nothing per peer may stay).
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

    /** The serving JVM's state at one moment. */
    /** @param links the software provider's TCP connections (one per peer device, whatever its QP count) */
    public record Snapshot(int platformThreads, long heapBytes, long directBytes, EngineCounters engine, int links) {
        public static Snapshot take(RdmaShuffleEngine e) throws InterruptedException {
            for (int i = 0; i < 2; i++) {
                System.gc();
                Thread.sleep(200);
            }
            long direct = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
                    .filter(b -> b.getName().equals("direct")).mapToLong(BufferPoolMXBean::getMemoryUsed).sum();
            return new Snapshot(ManagementFactory.getThreadMXBean().getThreadCount(),
                    ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed(), direct, e.counters(),
                    org.rdmashuffle.verbs.software.SoftwareProvider.instance().openLinks());
        }
    }

    /** One round: the serving JVM with every peer connected and idle, then after they left. */
    public record Result(int peers, Snapshot connected, Snapshot afterwards, long[] setUpMillis, long heapAndDirectPerPeerKib) {
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
                    case "--jvms" -> jvms = CommandLine.atLeast(option, CommandLine.value(args, ++i, option), 1);
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
            Snapshot idle = Snapshot.take(server);
            System.out.printf("serving JVM with its engine and no peer: %d platform threads, heap %.1f MiB, direct %.1f MiB%n",
                    idle.platformThreads(), idle.heapBytes() / 1048576.0, idle.directBytes() / 1048576.0);
            System.out.println();
            System.out.println("| peers | serving connections | TCP connections | platform threads | heap MiB | direct MiB | registered KiB "
                    + "| heap + direct per peer, KiB | set-up ms p50 / p99 / max | after the peers left: threads, connections |");
            System.out.println("|---|---|---|---|---|---|---|---|---|---|");
            for (int peers : peerCounts) {
                Result r = round(server, idle, peers, Math.min(jvms, peers));
                Snapshot s = r.connected();
                long[] ms = r.setUpMillis();
                System.out.printf("| %d | %d | %d | %d | %.1f | %.1f | %d | %d | %d / %d / %d | %d, %d |%n", peers,
                        s.engine().servingConnections(), s.links(), s.platformThreads(), s.heapBytes() / 1048576.0,
                        s.directBytes() / 1048576.0, s.engine().registeredMapOutputBytes() / 1024, r.heapAndDirectPerPeerKib(),
                        percentile(ms, 50), percentile(ms, 99), ms[ms.length - 1], r.afterwards().platformThreads(),
                        r.afterwards().engine().servingConnections());
            }
        } finally {
            deleteOutput(dir);
        }
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
     * Starts {@code peers} fetching engines in {@code jvms} child JVMs; returns once each has fetched and
     * checked every partition, the serving JVM has been measured, and the peers have left again.
     */
    public static Result round(RdmaShuffleEngine server, Snapshot idle, int peers, int jvms) throws Exception {
        List<Process> children = new ArrayList<>();
        List<PrintWriter> inputs = new ArrayList<>();
        List<Long> setUps = new ArrayList<>();
        try {
            for (int j = 0; j < jvms; j++) {
                int count = peers / jvms + (j < peers % jvms ? 1 : 0);
                Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-Xmx768m", "-XX:+UseSerialGC", "--enable-native-access=ALL-UNNAMED",
                        "--sun-misc-unsafe-memory-access=allow", "-cp", System.getProperty("java.class.path"),
                        ScalePeers.class.getName(), Integer.toString(server.address().getPort()), Integer.toString(count))
                        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
                children.add(p);
                inputs.add(new PrintWriter(p.getOutputStream(), true, StandardCharsets.UTF_8));
            }
            for (Process p : children) {
                BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
                String line = out.readLine();
                while (line != null && !line.startsWith("CONNECTED ")) {
                    line = out.readLine();
                }
                if (line == null) {
                    throw new IllegalStateException("a peer JVM exited before its peers connected (exit " + p.waitFor()
                            + "; its standard error says why)");
                }
                Arrays.stream(line.split(" ")).skip(2).mapToLong(Long::parseLong).forEach(setUps::add);
            }
            Snapshot connected = Snapshot.take(server);
            long[] ms = setUps.stream().mapToLong(Long::longValue).sorted().toArray();
            long perPeer = (connected.heapBytes() + connected.directBytes() - idle.heapBytes() - idle.directBytes()) / peers / 1024;
            inputs.forEach(in -> in.println("exit"));
            for (Process p : children) {
                if (!p.waitFor(2, TimeUnit.MINUTES)) {
                    p.destroyForcibly();
                }
            }
            return new Result(peers, connected, awaitPeersGone(server), ms, perPeer);
        } finally {
            children.forEach(Process::destroyForcibly);
        }
    }

    /** Waits (at most a minute) until the serving engine has let every peer's connection go. */
    private static Snapshot awaitPeersGone(RdmaShuffleEngine server) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
        while (server.counters().servingConnections() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        return Snapshot.take(server);
    }

    private static long percentile(long[] sorted, int p) {
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p / 100.0 * sorted.length) - 1)];
    }
}
