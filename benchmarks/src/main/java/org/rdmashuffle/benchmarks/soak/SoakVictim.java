package org.rdmashuffle.benchmarks.soak;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32;

import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.client.BlockFetchListener;
import org.rdmashuffle.core.client.FetchedBlock;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.software.SoftwareProvider;

/**
 * The well-behaved application: an executor's engine of the victim's application (user alice) on its
 * own host, fetching random blocks of the application's map outputs from the service without pause:
 * {@code --in-flight} fetch calls at once, each of 1 to {@code --max-blocks} blocks; a call done, the
 * next goes. Its map outputs are what its executors on the service's node left there in Spark's layout
 * ({@code usercache/alice/appcache/<app>/blockmgr-<uuid>/<2 hex>/shuffle_0_<map>_0.index/.data}),
 * written here before the first fetch (every host sees the machine's file system). Each block's
 * latency is the time from its fetch call to its listener's call; a block is a failure if the listener
 * is told it failed, or if its bytes are not the ones written (CRC-32). It writes {@code
 * victim-seconds.csv} (one line a second) and {@code victim-phases.csv} (one line a phase, written once
 * every call started in the phase has ended), and {@code victim-failures.log}.
 */
public final class SoakVictim {
    static final String SECONDS = "victim-seconds.csv";
    static final String PHASES = "victim-phases.csv";
    static final String FAILURES = "victim-failures.log";
    static final String PHASES_HEADER = "phase,seconds,blocks,failures,blocks_per_second,p50_us,p90_us,p99_us,p999_us,max_us";
    static final int SHUFFLE = 0;

    private final Path runDir;
    private final int maps;
    private final int partitions;
    private final long[][] crcs;
    private final long[][] sizes;
    private final Map<String, Phase> phases = new LinkedHashMap<>();
    private volatile Phase current;
    private final Second second = new Second();
    private final AtomicInteger failuresLogged = new AtomicInteger();

    private SoakVictim(Path runDir, int maps, int partitions) {
        this.runDir = runDir;
        this.maps = maps;
        this.partitions = partitions;
        this.crcs = new long[maps][partitions];
        this.sizes = new long[maps][partitions];
    }

    public static void main(String[] args) throws Exception {
        Path runDir = null;
        String address = null;
        Path localDir = null;
        int maps = 200;
        int partitions = 64;
        int inFlight = 4;
        int maxBlocks = 32;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--run-dir" -> runDir = Path.of(args[++i]);
                case "--address" -> address = args[++i];
                case "--service-local" -> localDir = Path.of(args[++i]);
                case "--maps" -> maps = Integer.parseInt(args[++i]);
                case "--partitions" -> partitions = Integer.parseInt(args[++i]);
                case "--in-flight" -> inFlight = Integer.parseInt(args[++i]);
                case "--max-blocks" -> maxBlocks = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        new SoakVictim(runDir, maps, partitions).run(address, localDir, inFlight, maxBlocks);
        System.exit(0);
    }

    private void run(String address, Path localDir, int inFlight, int maxBlocks) throws Exception {
        Path control = SoakFiles.control(runDir);
        String[] app = SoakFiles.await(control.resolve(SoakFiles.VICTIM_APP)).split(" ");
        String[] service = SoakFiles.await(control.resolve(SoakFiles.SERVICE_READY)).split(":");
        InetSocketAddress serviceAddress = new InetSocketAddress(InetAddress.getByName(service[0]), Integer.parseInt(service[1]));
        long bytes = writeOutputs(SoakFiles.appDir(localDir, SoakService.VICTIM_USER, app[0]));
        System.out.printf("wrote %d map outputs of %d partitions (%d bytes) for %s%n", maps, partitions, bytes, app[0]);
        InetAddress here = InetAddress.getByName(address);
        EngineConfig config = EngineConfig.defaults().set(EngineConfig.KEY_BIND_ADDRESS, address)
                .set(EngineConfig.KEY_FETCH_BUFFER_MEMORY, "64m");
        try (SoftwareProvider provider = new SoftwareProvider(new SoftwareProvider.Config(here, 0,
                SoftwareProvider.Admission.ISSUED_TOKEN));
             RdmaShuffleEngine engine = RdmaShuffleEngine.start(config, app[0], Base64.getDecoder().decode(app[1]), provider)) {
            SoakFiles.append(runDir.resolve(PHASES), PHASES_HEADER);
            SoakFiles.append(runDir.resolve(SECONDS), "epoch_ms,phase,blocks,failures,p50_us,p99_us,max_us");
            current = phase(SoakFiles.phase(runDir));
            SoakFiles.write(control.resolve(SoakFiles.VICTIM_READY), engine.address().toString(), false);
            List<Thread> workers = new ArrayList<>();
            for (int w = 0; w < inFlight; w++) {
                long seed = 1000 + w;
                workers.add(Thread.ofPlatform().name("victim-fetcher-" + w).start(
                        () -> fetchUntilDone(engine, serviceAddress, new Random(seed), maxBlocks)));
            }
            tickUntilDone();
            for (Thread t : workers) {
                t.join(TimeUnit.MINUTES.toMillis(5));
            }
            finishPhases(true);
            System.out.println("engine at the end: " + engine.counters());
        }
        SoakFiles.write(control.resolve(SoakFiles.VICTIM_DONE), "ok", false);
    }

    /** Spark's layout, one block manager dir (one executor with one local dir on the node); sizes 1-16 KiB. */
    private long writeOutputs(Path appDir) throws Exception {
        Path manager = appDir.resolve("blockmgr-" + UUID.randomUUID());
        Random r = new Random(42);
        long total = 0;
        for (int m = 0; m < maps; m++) {
            long[] offsets = new long[partitions + 1];
            byte[][] parts = new byte[partitions][];
            for (int p = 0; p < partitions; p++) {
                parts[p] = new byte[1024 + r.nextInt(15 * 1024 + 1)];
                r.nextBytes(parts[p]);
                CRC32 crc = new CRC32();
                crc.update(parts[p]);
                crcs[m][p] = crc.getValue();
                sizes[m][p] = parts[p].length;
                offsets[p + 1] = offsets[p] + parts[p].length;
            }
            String name = "shuffle_" + SHUFFLE + "_" + m + "_0";
            Path dataDir = Files.createDirectories(manager.resolve(SoakFiles.sparkSubDir(name + ".data", 1)));
            Path indexDir = Files.createDirectories(manager.resolve(SoakFiles.sparkSubDir(name + ".index", 1)));
            try (var out = new java.io.BufferedOutputStream(Files.newOutputStream(dataDir.resolve(name + ".data")))) {
                for (byte[] part : parts) {
                    out.write(part);
                }
            }
            Files.write(indexDir.resolve(name + ".index"), SoakFiles.sparkIndex(offsets));
            total += offsets[partitions];
        }
        return total;
    }

    /** One worker: a fetch call of random blocks, waited for, then the next, until the phase file says done. */
    private void fetchUntilDone(RdmaShuffleEngine engine, InetSocketAddress service, Random r, int maxBlocks) {
        while (true) {
            Phase phase = current;
            if (phase.name.equals(SoakFiles.DONE)) {
                return;
            }
            int n = 1 + r.nextInt(maxBlocks);
            List<BlockId> blocks = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                blocks.add(BlockId.of(SHUFFLE, r.nextInt(maps), r.nextInt(partitions)));
            }
            CountDownLatch done = new CountDownLatch(n);
            phase.callsOutstanding.incrementAndGet();
            long start = System.nanoTime();
            engine.fetchBlocks(service, blocks, new BlockFetchListener() {
                @Override
                public void onBlockFetched(FetchedBlock block) {
                    try {
                        long micros = (System.nanoTime() - start) / 1000;
                        BlockId id = block.id();
                        boolean intact = block.size() == sizes[(int) id.mapId()][id.startPartition()];
                        if (intact && block.isContiguous()) { // blocks of 16 KiB at most are never read in pieces
                            CRC32 crc = new CRC32();
                            crc.update(block.asByteBuffer());
                            intact = crc.getValue() == crcs[(int) id.mapId()][id.startPartition()];
                        }
                        if (intact) {
                            record(phase, micros);
                        } else {
                            fail(phase, id, "its bytes are not the ones written (" + block.size() + " bytes)");
                        }
                    } finally {
                        block.release();
                        done.countDown();
                    }
                }

                @Override
                public void onBlockFetchFailure(BlockId block, Throwable cause) {
                    fail(phase, block, String.valueOf(cause));
                    done.countDown();
                }
            });
            try {
                if (!done.await(5, TimeUnit.MINUTES)) {
                    for (long i = done.getCount(); i > 0; i--) {
                        fail(phase, null, "no answer in 5 minutes");
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } finally {
                phase.callsOutstanding.decrementAndGet();
            }
        }
    }

    private void record(Phase phase, long micros) {
        phase.add(micros);
        second.add(micros, false);
    }

    private void fail(Phase phase, BlockId block, String why) {
        phase.failures.incrementAndGet();
        second.add(0, true);
        if (failuresLogged.incrementAndGet() <= 200) {
            SoakFiles.append(runDir.resolve(FAILURES), System.currentTimeMillis() + " " + phase.name + " " + block + ": " + why);
        }
    }

    private synchronized Phase phase(String name) {
        return phases.computeIfAbsent(name, Phase::new);
    }

    /** Every second: the second's line, the phase file read, and phases whose calls have all ended written out. */
    private void tickUntilDone() throws InterruptedException {
        long nextSecond = System.currentTimeMillis() + 1000;
        while (true) {
            String now = SoakFiles.phase(runDir);
            if (!now.equals(current.name)) {
                Phase next = phase(now);
                next.begin = System.nanoTime();
                current.end = next.begin;
                current = next;
            }
            if (System.currentTimeMillis() >= nextSecond) {
                nextSecond += 1000;
                SoakFiles.append(runDir.resolve(SECONDS), System.currentTimeMillis() + "," + current.name + "," + second.take());
                finishPhases(false);
            }
            if (current.name.equals(SoakFiles.DONE)) {
                return;
            }
            Thread.sleep(20);
        }
    }

    /** Writes each phase that has ended and whose calls have all come back (all of them, at the end). */
    private synchronized void finishPhases(boolean all) {
        for (Phase p : phases.values()) {
            if (!p.written && p != current && p.end != 0 && (all || p.callsOutstanding.get() == 0)
                    && !p.name.equals(SoakFiles.DONE)) {
                p.written = true;
                SoakFiles.append(runDir.resolve(PHASES), p.summary());
            }
        }
    }

    /** The blocks of one phase (by the phase their fetch call started in): their latencies as a {@link Histogram}. */
    private static final class Phase {
        final String name;
        final AtomicInteger callsOutstanding = new AtomicInteger();
        final AtomicInteger failures = new AtomicInteger();
        volatile long begin = System.nanoTime();
        volatile long end;
        boolean written;
        private final Histogram latencies = new Histogram();

        Phase(String name) {
            this.name = name;
        }

        synchronized void add(long us) {
            latencies.add(us);
        }

        synchronized String summary() {
            double seconds = (end - begin) / 1e9;
            long count = latencies.count();
            return String.join(",", name, String.format("%.1f", seconds), Long.toString(count),
                    Integer.toString(failures.get()), String.format("%.0f", count / Math.max(seconds, 1e-9)),
                    Long.toString(latencies.quantile(0.50)), Long.toString(latencies.quantile(0.90)),
                    Long.toString(latencies.quantile(0.99)), Long.toString(latencies.quantile(0.999)),
                    Long.toString(latencies.max()));
        }
    }

    /**
     * Latencies in microseconds, counted in buckets: exact below 2,048 us, then 256 buckets per power
     * of two (within 0.4%). A phase of millions of blocks costs 60 KB, not a long per block.
     */
    static final class Histogram {
        private static final int EXACT = 2048;
        private final long[] counts = new long[EXACT + 64 * 256];
        private long count;
        private long max;

        void add(long us) {
            long v = Math.max(0, us);
            counts[bucket(v)]++;
            count++;
            max = Math.max(max, v);
        }

        static int bucket(long v) {
            if (v < EXACT) {
                return (int) v;
            }
            int log = 63 - Long.numberOfLeadingZeros(v); // >= 11
            return EXACT + (log - 11) * 256 + (int) ((v >> (log - 8)) & 255);
        }

        /** The smallest value of bucket {@code b}. */
        static long lowest(int b) {
            if (b < EXACT) {
                return b;
            }
            int log = (b - EXACT) / 256 + 11;
            return (256L + (b - EXACT) % 256) << (log - 8);
        }

        long count() {
            return count;
        }

        long max() {
            return max;
        }

        /** The value at quantile {@code q}: the lowest value of the bucket holding it. */
        long quantile(double q) {
            if (count == 0) {
                return 0;
            }
            long rank = Math.max(1, (long) Math.ceil(q * count));
            long seen = 0;
            for (int b = 0; b < counts.length; b++) {
                seen += counts[b];
                if (seen >= rank) {
                    return Math.min(lowest(b), max);
                }
            }
            return max;
        }
    }

    /** Quantile {@code q} of sorted values (one second's blocks). */
    static long quantile(long[] sorted, double q) {
        if (sorted.length == 0) {
            return 0;
        }
        return sorted[(int) Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
    }

    /** The current second's blocks. */
    private static final class Second {
        private long[] micros = new long[1 << 12];
        private int count;
        private int failures;

        synchronized void add(long us, boolean failed) {
            if (failed) {
                failures++;
                return;
            }
            if (count == micros.length) {
                micros = Arrays.copyOf(micros, count * 2);
            }
            micros[count++] = us;
        }

        synchronized String take() {
            long[] sorted = Arrays.copyOf(micros, count);
            Arrays.sort(sorted);
            String line = count + "," + failures + "," + quantile(sorted, 0.5) + "," + quantile(sorted, 0.99) + ","
                    + (count == 0 ? 0 : sorted[count - 1]);
            count = 0;
            failures = 0;
            return line;
        }
    }
}
