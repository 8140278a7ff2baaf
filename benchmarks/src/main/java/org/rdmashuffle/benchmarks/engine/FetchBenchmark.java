package org.rdmashuffle.benchmarks.engine;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.zip.CRC32C;

import org.apache.spark.SparkConf;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.network.netty.NettyBlockTransferService;
import org.apache.spark.network.shuffle.BlockFetchingListener;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.client.BlockFetchListener;
import org.rdmashuffle.core.client.FetchedBlock;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.benchmarks.CommandLine;

/**
 * Fetches the same file segments from another JVM two ways, alternating in one run: this engine (on
 * the software provider, the one CI machines have) and Spark's NettyBlockTransferService (what Spark
 * fetches remote shuffle blocks with). Both are driven alike, as Spark's ShuffleBlockFetcherIterator
 * does: requests of up to 10 MiB, each of one reducer's blocks only, at most 48 MiB requested and not
 * yet consumed (several reducers' requests in flight, as concurrent tasks have), every block read
 * through an InputStream (as Spark's deserializers read it), its bytes checked (CRC32C), and released,
 * by one consumer thread. The access pattern is a reduce stage's: reducer after reducer, each reads
 * its partition from every map output (so no two blocks of a request are neighbours in one file, and
 * nothing can be merged into one read).
 *
 * <p>Reports per workload and system: throughput (median over rounds), the throughput ratio, client
 * heap allocation per GB and per block, CPU per GB on each side and the client's per block (the whole
 * client process: the fetching system's threads and the consumer's), and the median and 99th percentile
 * of a block's latency (from its request to its delivery).
 *
 * <p>With {@code --heap-by-layer}, each measured run is also recorded with JFR's allocation sampling
 * and its heap per block split by layer (the engine, the verbs provider, the harness; Spark, Netty).
 *
 * <p>With {@code --batch K}, each reducer reads K contiguous partitions of every map output as one
 * block, as Spark does when adaptive execution coalesces partitions (a {@code ShuffleBlockBatchId};
 * Netty's fetch is then sent with {@code batchFetchEnabled}, the engine reads the run as one range).
 *
 * <p>With {@code --variant key=value[,key=value]}, a second engine with those settings (e.g.
 * {@code busyPoll=0}) fetches too, alternated with the other two in the same rounds.
 *
 * <p>With {@code --server-variant key=value[,key=value]}, the serving JVM runs a second engine with
 * those settings over the same files (e.g. {@code memoryWindows=true}), and the first client engine
 * fetches from it too, alternated with the others in the same rounds.
 *
 * <p>Usage: {@code FetchBenchmark [--rounds N] [--dir DIR] [--csv FILE] [--heap-by-layer] [--batch K]
 * [--variant k=v,...] [--server-variant k=v,...] [2000x256k 50000x4k ...]}
 */
public final class FetchBenchmark {
    static final String APP = "fetch-benchmark";
    static final byte[] SECRET = "fetch-benchmark-secret-0123456789".getBytes(StandardCharsets.US_ASCII);
    private static final long MAX_IN_FLIGHT = 48L << 20;
    private static final long REQUEST_BYTES = 10L << 20;

    /** A delivered block as Spark's reader sees it: a stream over the bytes, and how to release them. */
    private record Delivered(long map, int partition, java.io.InputStream data, Runnable release, Throwable failure,
                             long latencyNanos) {
    }

    /** One system under test: asks for blocks, delivers them to the queue. */
    private interface Fetcher {
        String name();

        /**
         * Asks for these blocks of the workload's shuffle ({@link FetchWorkload#engineShuffle}):
         * partitions {@code [partitions[i], partitions[i] + batch)} of map {@code maps[i]}, each
         * one block (a ShuffleBlockBatchId where {@code batch > 1}); {@code issued} is when (System.nanoTime), for the
         * latency of each.
         */
        void fetch(int shuffle, long[] maps, int[] partitions, int batch, LinkedBlockingQueue<Delivered> to, long issued);
    }

    private record Sample(String system, String workload, long wallNanos, long clientCpu, long serverCpu, long allocated,
                          long bytes, int blocks, long p50Nanos, long p99Nanos, java.time.Instant began, java.time.Instant ended) {
        double gbPerSecond() {
            return bytes / (wallNanos / 1e9) / 1e9;
        }
    }

    static SparkConf sparkConf() {
        return new SparkConf(false).set("spark.app.id", APP).set("spark.shuffle.io.numConnectionsPerPeer", "1");
    }

    static NettyBlockTransferService nettyService(SparkConf conf) {
        return new NettyBlockTransferService(conf, FetchServer.security(conf), FetchServer.serializers(conf), "127.0.0.1",
                "127.0.0.1", 0, 2, null);
    }

    /** {@code conf} with the settings of {@code kvs} ({@code key=value[,key=value]}). */
    static EngineConfig withSettings(EngineConfig conf, String kvs) {
        for (String kv : kvs.split(",")) {
            String[] p = kv.split("=", 2);
            conf = conf.set(p[0], p[1]);
        }
        return conf;
    }

    /** Its command line. */
    record Options(int rounds, Path dir, Path csv, boolean heapByLayer, int batch, String variant, String serverVariant,
                   List<FetchWorkload> workloads) {
        static final String USAGE = "FetchBenchmark [--rounds N] [--dir DIR] [--csv FILE] [--heap-by-layer] [--batch K] "
                + "[--variant k=v,...] [--server-variant k=v,...] [2000x256k 50000x4k ...]";

        /** Parses and checks the command line; a bad argument is an IllegalArgumentException naming it. */
        static Options parse(String... args) {
            int rounds = 3;
            Path dir = null;
            Path csv = null;
            boolean heapByLayer = false;
            int batch = 1;
            String variant = null;
            String serverVariant = null;
            List<FetchWorkload> workloads = new ArrayList<>();
            for (int i = 0; i < args.length; i++) {
                String option = args[i];
                switch (option) {
                    case "--rounds" -> rounds = CommandLine.atLeast(option, CommandLine.value(args, ++i, option), 1);
                    case "--dir" -> dir = Path.of(CommandLine.value(args, ++i, option));
                    case "--csv" -> csv = Path.of(CommandLine.value(args, ++i, option));
                    case "--heap-by-layer" -> heapByLayer = true;
                    case "--batch" -> batch = CommandLine.atLeast(option, CommandLine.value(args, ++i, option), 1);
                    case "--variant" -> variant = settings(option, CommandLine.value(args, ++i, option));
                    case "--server-variant" -> serverVariant = settings(option, CommandLine.value(args, ++i, option));
                    default -> {
                        if (option.startsWith("-")) {
                            throw new IllegalArgumentException("unknown argument " + option + " (usage: " + USAGE + ")");
                        }
                        workloads.add(FetchWorkload.parse(option));
                    }
                }
            }
            if (workloads.isEmpty()) {
                workloads = List.of(FetchWorkload.parse("2000x256k"), FetchWorkload.parse("50000x4k"));
            }
            for (FetchWorkload w : workloads) {
                if (w.partitions() % batch != 0) {
                    throw new IllegalArgumentException("--batch " + batch + " does not divide workload " + w.name() + "'s "
                            + w.partitions() + " partitions per map");
                }
            }
            return new Options(rounds, dir, csv, heapByLayer, batch, variant, serverVariant, List.copyOf(workloads));
        }

        /** {@code kvs} if the engine takes every {@code key=value} of it, else an error naming the option and the setting. */
        private static String settings(String option, String kvs) {
            for (String kv : kvs.split(",")) {
                if (kv.indexOf('=') <= 0) {
                    throw new IllegalArgumentException(option + " takes key=value[,key=value] engine settings, not '" + kvs + "'");
                }
                try {
                    withSettings(EngineConfig.defaults(), kv);
                } catch (IllegalArgumentException | ArithmeticException e) {
                    throw new IllegalArgumentException(option + " " + kv + ": " + e.getMessage());
                }
            }
            return kvs;
        }
    }

    public static void main(String[] args) throws Exception {
        Options o = CommandLine.parseOrExit("FetchBenchmark", () -> Options.parse(args));
        int rounds = o.rounds();
        Path dir = o.dir();
        Path csv = o.csv();
        boolean heapByLayer = o.heapByLayer();
        int batch = o.batch();
        String variant = o.variant();
        String serverVariant = o.serverVariant();
        List<FetchWorkload> workloads = o.workloads();
        if (dir == null) {
            dir = Files.createTempDirectory("rdma-shuffle-fetch-bench");
        }
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx1g", "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
                "-cp", System.getProperty("java.class.path"), FetchServer.class.getName(), dir.toString()));
        workloads.forEach(w -> cmd.add(w.name()));
        if (serverVariant != null) {
            cmd.add("--server-variant=" + serverVariant);
        }
        Process server = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        BufferedReader serverOut = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
        PrintWriter serverIn = new PrintWriter(server.getOutputStream(), true);
        String ready;
        while ((ready = serverOut.readLine()) != null && !ready.startsWith("READY ")) {
            // Spark's or the engine's start-up lines
        }
        if (ready == null) {
            throw new IllegalStateException("the serving JVM exited: " + server.waitFor());
        }
        String[] ports = ready.split(" ");
        InetSocketAddress enginePeer = new InetSocketAddress("127.0.0.1", Integer.parseInt(ports[1]));
        int nettyPort = Integer.parseInt(ports[2]);
        InetSocketAddress variantPeer = new InetSocketAddress("127.0.0.1", Integer.parseInt(ports[3]));

        List<Sample> samples = new ArrayList<>();
        AllocationProfile profile = heapByLayer ? AllocationProfile.start() : null;
        List<AutoCloseable> closeAfter = new ArrayList<>();
        try (RdmaShuffleEngine engine = RdmaShuffleEngine.start(EngineConfig.defaults().set(EngineConfig.KEY_PROVIDER, "software"),
                APP, SECRET)) {
            NettyBlockTransferService netty = nettyService(sparkConf());
            netty.init(null); // a fetching-only service never serves
            Fetcher rdma = engineFetcher(engine, "rdma-shuffle (" + engine.providerName() + ")", enginePeer);
            List<Fetcher> systems = new ArrayList<>(List.of(rdma));
            if (variant != null) {
                EngineConfig conf = withSettings(EngineConfig.defaults().set(EngineConfig.KEY_PROVIDER, "software"), variant);
                RdmaShuffleEngine other = RdmaShuffleEngine.start(conf, APP, SECRET);
                closeAfter.add(other);
                systems.add(engineFetcher(other, "rdma-shuffle (" + other.providerName() + ", " + variant + ")", enginePeer));
            }
            if (serverVariant != null) {
                systems.add(engineFetcher(engine, "rdma-shuffle (" + engine.providerName() + ", server " + serverVariant + ")",
                        variantPeer));
            }
            systems.add(new Fetcher() {
                public String name() {
                    return "Spark NettyBlockTransferService";
                }

                public void fetch(int shuffle, long[] maps, int[] partitions, int batch, LinkedBlockingQueue<Delivered> to, long issued) {
                    String[] ids = new String[maps.length];
                    for (int i = 0; i < maps.length; i++) {
                        // Spark's names: shuffle_S_M_R, or shuffle_S_M_START_END for a batch (sent with batchFetchEnabled)
                        ids[i] = "shuffle_" + FetchWorkload.SHUFFLE + "_" + maps[i] + "_" + partitions[i]
                                + (batch > 1 ? "_" + (partitions[i] + batch) : "");
                    }
                    netty.fetchBlocks("127.0.0.1", nettyPort, "exec-1", ids, new BlockFetchingListener() {
                        public void onBlockFetchSuccess(String id, ManagedBuffer data) {
                            data.retain(); // as ShuffleBlockFetcherIterator does: the fetcher releases its reference
                            String[] p = id.split("_");
                            try {
                                to.add(new Delivered(Long.parseLong(p[2]), Integer.parseInt(p[3]), data.createInputStream(),
                                        data::release, null, System.nanoTime() - issued));
                            } catch (java.io.IOException e) {
                                data.release();
                                to.add(new Delivered(Long.parseLong(p[2]), Integer.parseInt(p[3]), null, () -> { }, e, 0));
                            }
                        }

                        public void onBlockFetchFailure(String id, Throwable cause) {
                            String[] p = id.split("_");
                            to.add(new Delivered(Long.parseLong(p[2]), Integer.parseInt(p[3]), null, () -> { }, cause, 0));
                        }
                    }, null);
                }
            });
            long mapBase = 0;
            for (int index = 0; index < workloads.size(); index++) {
                FetchWorkload w = workloads.get(index);
                int shuffle = FetchWorkload.engineShuffle(index);
                if (w.partitions() % batch != 0) {
                    throw new IllegalArgumentException(w.name() + ": " + w.partitions() + " partitions per map, not a multiple "
                            + "of --batch " + batch);
                }
                int[][] crcs = expectedCrcs(w, batch);
                System.out.printf("%s: %d blocks of %d B (%d MiB) from %d map outputs%s%n", w.name(), w.blocks(), w.blockBytes(),
                        w.totalBytes() >> 20, w.maps(), batch > 1 ? ", fetched " + batch + " partitions per block" : "");
                for (Fetcher f : systems) {
                    run(f, w, shuffle, batch, mapBase, crcs, serverIn, serverOut); // warm-up, not recorded
                }
                for (int r = 0; r < rounds; r++) {
                    for (Fetcher f : r % 2 == 0 ? systems : systems.reversed()) {
                        Sample s = run(f, w, shuffle, batch, mapBase, crcs, serverIn, serverOut);
                        samples.add(s);
                        System.out.printf("  round %d %-36s %6.3f GB/s%n", r + 1, s.system(), s.gbPerSecond());
                    }
                }
                mapBase += w.maps();
            }
            netty.close();
            for (AutoCloseable c : closeAfter) {
                c.close();
            }
        } finally {
            serverIn.close();
            server.waitFor();
        }
        if (profile != null) {
            profile.stop();
        }
        report(samples, rounds, csv, profile);
    }

    /** A system under test: the engine, fetching from the serving JVM's engine at {@code peer}. */
    private static Fetcher engineFetcher(RdmaShuffleEngine engine, String name, InetSocketAddress peer) {
        return new Fetcher() {
            public String name() {
                return name;
            }

            public void fetch(int shuffle, long[] maps, int[] partitions, int batch, LinkedBlockingQueue<Delivered> to, long issued) {
                List<BlockId> ids = new ArrayList<>(maps.length);
                for (int i = 0; i < maps.length; i++) {
                    ids.add(new BlockId(shuffle, maps[i], partitions[i], partitions[i] + batch));
                }
                engine.fetchBlocks(peer, ids, new BlockFetchListener() {
                    public void onBlockFetched(FetchedBlock b) {
                        to.add(new Delivered(b.id().mapId(), b.id().startPartition(), b.openStream(), b::release, null,
                                System.nanoTime() - issued));
                    }

                    public void onBlockFetchFailure(BlockId b, Throwable cause) {
                        to.add(new Delivered(b.mapId(), b.startPartition(), null, () -> { }, cause, 0));
                    }
                });
            }
        };
    }

    /** The CRC32C of each fetched block: {@code [m][u]} of partitions {@code [u * batch, (u + 1) * batch)} of map m. */
    private static int[][] expectedCrcs(FetchWorkload w, int batch) {
        int[][] crcs = new int[w.maps()][w.partitions() / batch];
        ByteBuffer scratch = ByteBuffer.allocate(w.blockBytes());
        CRC32C crc = new CRC32C();
        for (int m = 0; m < w.maps(); m++) {
            for (int u = 0; u < w.partitions() / batch; u++) {
                crc.reset();
                for (int p = u * batch; p < (u + 1) * batch; p++) {
                    scratch.clear();
                    w.fill(m, p, scratch);
                    scratch.flip();
                    crc.update(scratch);
                }
                crcs[m][u] = (int) crc.getValue();
            }
        }
        return crcs;
    }

    private static Sample run(Fetcher f, FetchWorkload w, int shuffle, int batch, long mapBase, int[][] crcs, PrintWriter serverIn,
                              BufferedReader serverOut) throws Exception {
        var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        LinkedBlockingQueue<Delivered> queue = new LinkedBlockingQueue<>();
        int total = w.blocks() / batch; // blocks fetched: one per map and run of `batch` partitions
        long blockBytes = (long) batch * w.blockBytes();
        int perRequest = (int) Math.max(1, REQUEST_BYTES / blockBytes);
        long serverCpu0 = serverCpu(serverIn, serverOut);
        java.time.Instant began = java.time.Instant.now();
        long cpu0 = os.getProcessCpuTime();
        long alloc0 = threads.getTotalThreadAllocatedBytes();
        long t0 = System.nanoTime();
        int next = 0;
        int received = 0;
        long outstanding = 0;
        CRC32C crc = new CRC32C();
        long[] latencies = new long[total];
        byte[] chunk = new byte[64 << 10]; // the reader's buffer, as a deserializer has
        while (received < total) {
            while (next < total && outstanding + perRequest * blockBytes <= MAX_IN_FLIGHT) {
                // A request is one reducer's (a task asks only for its own partitions): it ends at the last map.
                int k = Math.min(perRequest, w.maps() - next % w.maps());
                long[] maps = new long[k];
                int[] partitions = new int[k];
                for (int i = 0; i < k; i++) {
                    // A reduce stage's order: reducer p reads partition p of every map, then reducer p + 1 (with
                    // batch fetch, reducer p reads partitions [p * batch, (p + 1) * batch) of every map as one block).
                    maps[i] = mapBase + (next + i) % w.maps();
                    partitions[i] = (next + i) / w.maps() * batch;
                }
                f.fetch(shuffle, maps, partitions, batch, queue, System.nanoTime());
                outstanding += k * blockBytes;
                next += k;
            }
            Delivered d = queue.take();
            latencies[received] = d.latencyNanos();
            if (d.failure() != null) {
                throw new IllegalStateException(f.name() + ": block " + d.map() + "/" + d.partition() + " failed", d.failure());
            }
            crc.reset();
            long length = 0;
            for (int n; (n = d.data().read(chunk)) > 0; length += n) {
                crc.update(chunk, 0, n);
            }
            if ((int) crc.getValue() != crcs[(int) (d.map() - mapBase)][d.partition() / batch] || length != blockBytes) {
                throw new IllegalStateException(f.name() + ": block " + d.map() + "/" + d.partition() + " has wrong bytes");
            }
            d.release().run();
            outstanding -= blockBytes;
            received++;
        }
        long wall = System.nanoTime() - t0;
        long allocated = threads.getTotalThreadAllocatedBytes() - alloc0;
        java.time.Instant ended = java.time.Instant.now();
        Arrays.sort(latencies);
        return new Sample(f.name(), w.name() + (batch > 1 ? " in batches of " + batch : ""), wall, os.getProcessCpuTime() - cpu0, serverCpu(serverIn, serverOut) - serverCpu0,
                allocated, w.totalBytes(), total, latencies[total / 2], latencies[(int) Math.min(total - 1, total * 99L / 100)],
                began, ended);
    }

    private static long serverCpu(PrintWriter in, BufferedReader out) throws java.io.IOException {
        in.println("cpu");
        String line;
        while ((line = out.readLine()) != null && !line.startsWith("CPU ")) {
            // skip
        }
        return Long.parseLong(line.substring(4).trim());
    }

    private static void report(List<Sample> samples, int rounds, Path csv, AllocationProfile profile) throws java.io.IOException {
        Map<String, Map<String, List<Sample>>> by = new LinkedHashMap<>();
        for (Sample s : samples) {
            by.computeIfAbsent(s.workload(), k -> new LinkedHashMap<>()).computeIfAbsent(s.system(), k -> new ArrayList<>()).add(s);
        }
        StringBuilder md = new StringBuilder("| workload | system | GB/s (median of " + rounds
                + ") | ratio | client heap MB/GB | client heap B/block | client CPU s/GB | client CPU ns/block | server CPU s/GB "
                + "| block p50 / p99 ms |\n|---|---|---|---|---|---|---|---|---|---|\n");
        StringBuilder out = new StringBuilder("workload,system,round,wall_ms,gb_per_s,client_cpu_ms,server_cpu_ms,allocated_bytes,"
                + "p50_us,p99_us\n");
        for (var wl : by.entrySet()) {
            double baseline = 0;
            List<String[]> rows = new ArrayList<>();
            for (var sys : wl.getValue().entrySet()) {
                List<Sample> l = sys.getValue();
                double gbs = median(l.stream().mapToDouble(Sample::gbPerSecond).toArray());
                double gb = l.get(0).bytes() / 1e9;
                double heap = median(l.stream().mapToDouble(s -> s.allocated() / 1e6 / gb).toArray());
                double ccpu = median(l.stream().mapToDouble(s -> s.clientCpu() / 1e9 / gb).toArray());
                double scpu = median(l.stream().mapToDouble(s -> s.serverCpu() / 1e9 / gb).toArray());
                double perBlock = median(l.stream().mapToDouble(s -> (double) s.allocated() / s.blocks()).toArray());
                double cpuPerBlock = median(l.stream().mapToDouble(s -> (double) s.clientCpu() / s.blocks()).toArray());
                double p50 = median(l.stream().mapToDouble(s -> s.p50Nanos() / 1e6).toArray());
                double p99 = median(l.stream().mapToDouble(s -> s.p99Nanos() / 1e6).toArray());
                if (sys.getKey().startsWith("Spark")) {
                    baseline = gbs;
                }
                rows.add(new String[] {sys.getKey(), String.format("%.3f", gbs), Double.toString(gbs), String.format("%.1f", heap),
                        String.format("%.0f", perBlock), String.format("%.2f", ccpu), String.format("%.2f", scpu),
                        String.format("%.2f / %.2f", p50, p99), String.format("%.0f", cpuPerBlock)});
                int r = 0;
                for (Sample s : l) {
                    out.append(String.join(",", wl.getKey(), s.system(), Integer.toString(++r), Long.toString(s.wallNanos() / 1_000_000),
                            String.format("%.4f", s.gbPerSecond()), Long.toString(s.clientCpu() / 1_000_000),
                            Long.toString(s.serverCpu() / 1_000_000), Long.toString(s.allocated()),
                            Long.toString(s.p50Nanos() / 1000), Long.toString(s.p99Nanos() / 1000))).append('\n');
                }
            }
            for (String[] row : rows) {
                double ratio = baseline > 0 ? Double.parseDouble(row[2]) / baseline : Double.NaN;
                md.append("| ").append(wl.getKey()).append(" | ").append(row[0]).append(" | ").append(row[1]).append(" | ")
                        .append(String.format("%.2f", ratio)).append(" | ").append(row[3]).append(" | ").append(row[4])
                        .append(" | ").append(row[5]).append(" | ").append(row[8]).append(" | ").append(row[6]).append(" | ")
                        .append(row[7]).append(" |\n");
            }
        }
        System.out.println();
        System.out.print(md);
        if (profile != null) {
            heapByLayer(by, profile);
        }
        if (csv != null) {
            Files.createDirectories(csv.toAbsolutePath().getParent());
            Files.writeString(csv, out);
            System.out.println("samples: " + csv);
        }
    }

    /** With --heap-by-layer: each system's heap per block by layer, from JFR's samples (median over rounds). */
    private static void heapByLayer(Map<String, Map<String, List<Sample>>> by, AllocationProfile profile) {
        StringBuilder md = new StringBuilder("| workload | system | layer | heap B/block (JFR samples, median) |\n|---|---|---|---|\n");
        boolean any = false;
        for (var wl : by.entrySet()) {
            for (var sys : wl.getValue().entrySet()) {
                List<Map<String, Long>> runs = sys.getValue().stream().map(s -> profile.between(s.began(), s.ended())).toList();
                java.util.Set<String> layers = new java.util.TreeSet<>();
                runs.forEach(r -> layers.addAll(r.keySet()));
                for (String layer : layers) {
                    any = true;
                    int blocks = sys.getValue().getFirst().blocks();
                    double perBlock = median(runs.stream().mapToDouble(r -> (double) r.getOrDefault(layer, 0L) / blocks).toArray());
                    md.append("| ").append(wl.getKey()).append(" | ").append(sys.getKey()).append(" | ").append(layer)
                            .append(" | ").append(String.format("%.0f", perBlock)).append(" |\n");
                }
            }
        }
        if (any) {
            System.out.println();
            System.out.print(md);
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }
}
