package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.rdmashuffle.core.client.BlockFetchListener;
import org.rdmashuffle.core.client.FetchedBlock;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.verbs.VerbsProvider;
import org.rdmashuffle.verbs.software.SoftwareProvider;
import org.rdmashuffle.verbs.testing.TestProviders;

/**
 * Engines, map-output files and a collecting listener for the engine tests. Engines run (chosen by
 * {@link TestProviders}, native-verbs' test jar) on a fresh
 * software provider by default, or on the libibverbs device with {@code
 * -Drdmashuffle.test.provider=ibverbs} (the Soft-RoCE guest: {@code SOFTROCE_DEVICE}, {@code
 * SOFTROCE_GID_INDEX}).
 */
final class EngineTestSupport {
    static final byte[] SECRET = "engine-test-secret-0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    static final String APP = "app-engine-test";
    static final Duration WAIT = Duration.ofSeconds(60);

    private EngineTestSupport() {
    }

    /**
     * Tags of tests the Soft-RoCE guest leaves out (they also skip themselves there): attacks on the
     * software provider's own dialling, which libibverbs does not do, and comparisons of waits the
     * guest's emulated CPU makes meaningless.
     */
    static final String SOFTWARE_PROVIDER_ONLY = "software-provider-only";
    static final String TIMING = "timing";

    /** Small pools and short timeouts: tests exercise the bounds without much memory. */
    /** Counts the FetchRequests {@code pair}'s fetching engine sends (its tamper hook: one per engine). */
    static java.util.concurrent.atomic.AtomicInteger countFetchRequests(EnginePair pair) {
        java.util.concurrent.atomic.AtomicInteger requests = new java.util.concurrent.atomic.AtomicInteger();
        pair.client.tamper(new RdmaShuffleEngine.Tamper() {
            @Override
            public org.rdmashuffle.core.protocol.Message message(org.rdmashuffle.core.transport.DataConnection.Role role,
                                                                  org.rdmashuffle.core.protocol.Message m) {
                if (m instanceof org.rdmashuffle.core.protocol.Message.FetchRequest) {
                    requests.incrementAndGet();
                }
                return m;
            }
        });
        return requests;
    }

    /** A registration hook that holds each registration until {@code release} (at most 60 s): a registration that never ends. */
    static Runnable heldUntil(CountDownLatch release) {
        return () -> {
            try {
                release.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
    }

    static EngineConfig smallConfig() {
        EngineConfig c = EngineConfig.defaults().set(EngineConfig.KEY_RECEIVE_BUFFERS, "32")
                .set(EngineConfig.KEY_RECEIVE_LOW_WATER, "4").set(EngineConfig.KEY_SEND_BUFFERS, "16")
                .set(EngineConfig.KEY_FETCH_BUFFER_MEMORY, "32m").set(EngineConfig.KEY_REGISTERED_MEMORY_LIMIT, "256m")
                .set(EngineConfig.KEY_FETCH_TIMEOUT, "20s")
                // A cold JVM in the emulated guest takes seconds over its first handshake.
                .set(EngineConfig.KEY_CONNECT_TIMEOUT, usesDevice() ? "30s" : "5s");
        String bind = System.getProperty("rdmashuffle.test.bindAddress");
        if (bind != null) { // this host's address on a wire to another (the Soft-RoCE pair)
            c.set(EngineConfig.KEY_BIND_ADDRESS, bind);
        }
        if (usesDevice()) {
            String dev = System.getenv("SOFTROCE_DEVICE");
            if (dev != null) {
                c.set(EngineConfig.KEY_DEVICE, dev);
            }
            String gid = System.getenv("SOFTROCE_GID_INDEX");
            if (gid != null && bind == null) { // across hosts the engine chooses the GID of its bind address
                c.set(EngineConfig.KEY_GID_INDEX, gid);
            }
        }
        return c;
    }

    /** Data sizes for a test: a quarter on the device, whose emulated guest is slow. */
    static int size(int bytes) {
        return usesDevice() ? Math.max(1, bytes / 4) : bytes;
    }

    static boolean usesDevice() {
        return TestProviders.usesDevice(SoftwareProvider.NAME);
    }

    /** The provider for one engine: the device, or a software provider of its own (closed by {@link #closeProvider}). */
    static VerbsProvider provider() {
        return TestProviders.fresh(SoftwareProvider.NAME);
    }

    /** The software provider counts its connected queue pairs: zero once every engine on it closed. */
    static void assertNoConnectionsLeft(VerbsProvider p) {
        try {
            eventually("software provider connections closed: " + TestProviders.openConnections(p),
                    () -> TestProviders.openConnections(p) == 0);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void closeProvider(VerbsProvider p) {
        TestProviders.close(p);
    }

    /** One map output on disk: random bytes cut into partitions of random sizes, some empty. */
    record MapOutput(int shuffleId, long mapId, Path file, long[] offsets, byte[] data) {
        byte[] bytes(BlockId b) {
            int from = (int) offsets[b.startPartition()];
            int to = (int) offsets[b.endPartition()];
            return java.util.Arrays.copyOfRange(data, from, to);
        }
    }

    static MapOutput writeMapOutput(Path dir, int shuffle, long map, int partitions, int maxPartitionBytes, long seed)
            throws IOException {
        Random random = new Random(seed);
        long[] offsets = new long[partitions + 1];
        for (int p = 0; p < partitions; p++) {
            int size = random.nextInt(8) == 0 ? 0 : 1 + random.nextInt(maxPartitionBytes);
            offsets[p + 1] = offsets[p] + size;
        }
        byte[] data = new byte[(int) offsets[partitions]];
        random.nextBytes(data);
        Path file = dir.resolve("shuffle_" + shuffle + "_" + map + "_0.data");
        Files.write(file, data);
        return new MapOutput(shuffle, map, file, offsets, data);
    }

    /** A map output whose partitions have exactly these sizes, of random bytes. */
    static MapOutput writeMapOutput(Path dir, int shuffle, long map, int[] sizes, long seed) throws IOException {
        long[] offsets = new long[sizes.length + 1];
        for (int p = 0; p < sizes.length; p++) {
            offsets[p + 1] = offsets[p] + sizes[p];
        }
        byte[] data = new byte[Math.toIntExact(offsets[sizes.length])];
        new Random(seed).nextBytes(data);
        Path file = dir.resolve("shuffle_" + shuffle + "_" + map + "_0.data");
        Files.write(file, data);
        return new MapOutput(shuffle, map, file, offsets, data);
    }

    /** Every single-partition block of these outputs. */
    static List<BlockId> everyPartition(List<MapOutput> outputs) {
        List<BlockId> blocks = new ArrayList<>();
        for (MapOutput o : outputs) {
            for (int p = 0; p + 1 < o.offsets().length; p++) {
                blocks.add(BlockId.of(o.shuffleId(), o.mapId(), p));
            }
        }
        return blocks;
    }

    static Map<BlockId, byte[]> expected(List<MapOutput> outputs, List<BlockId> blocks) {
        Map<BlockId, byte[]> m = new HashMap<>();
        for (BlockId b : blocks) {
            for (MapOutput o : outputs) {
                if (o.shuffleId() == b.shuffleId() && o.mapId() == b.mapId()) {
                    m.put(b, o.bytes(b));
                }
            }
        }
        return m;
    }

    /** Copies each fetched block's bytes and releases it; records failures. */
    static class Collector implements BlockFetchListener {
        final Map<BlockId, byte[]> fetched = new ConcurrentHashMap<>();
        final Map<BlockId, Throwable> failed = new ConcurrentHashMap<>();
        private final CountDownLatch done;

        Collector(int blocks) {
            done = new CountDownLatch(blocks);
        }

        @Override
        public void onBlockFetched(FetchedBlock block) {
            if (block.isContiguous()) {
                take(block);
            } else {
                // Read in pieces: its stream waits for pieces the poller (this thread) delivers.
                Thread.ofVirtual().start(() -> take(block));
            }
        }

        private void take(FetchedBlock block) {
            byte[] copy;
            try (java.io.InputStream in = block.openStream()) {
                copy = in.readAllBytes();
            } catch (java.io.IOException e) {
                onBlockFetchFailure(block.id(), e);
                return;
            } finally {
                block.release();
            }
            if (fetched.put(block.id(), copy) != null) {
                failed.put(block.id(), new AssertionError("delivered twice"));
            }
            done.countDown();
        }

        @Override
        public void onBlockFetchFailure(BlockId block, Throwable cause) {
            if (failed.put(block, cause) != null || fetched.containsKey(block)) {
                failed.put(block, new AssertionError("reported twice", cause));
            }
            done.countDown();
        }

        /** Whether every block was answered within {@code d}. */
        boolean answeredWithin(Duration d) throws InterruptedException {
            return done.await(d.toMillis(), TimeUnit.MILLISECONDS);
        }

        Collector await() throws InterruptedException {
            assertTrue(done.await(WAIT.toSeconds(), TimeUnit.SECONDS), "blocks still owed: " + done.getCount() + " (fetched "
                    + fetched.size() + ", failed " + failed.size() + ")");
            return this;
        }

        void assertAllIntact(Map<BlockId, byte[]> expected) {
            if (!failed.isEmpty()) {
                Map.Entry<BlockId, Throwable> first = failed.entrySet().iterator().next();
                throw new AssertionError(failed.size() + " blocks failed, e.g. " + first.getKey(), first.getValue());
            }
            for (Map.Entry<BlockId, byte[]> e : expected.entrySet()) {
                byte[] got = fetched.get(e.getKey());
                if (got == null || !java.util.Arrays.equals(e.getValue(), got)) {
                    throw new AssertionError(e.getKey() + ": " + (got == null ? "missing" : "wrong bytes (" + got.length
                            + " bytes, expected " + e.getValue().length + ")"));
                }
            }
        }
    }

    /** Waits until {@code condition} holds (for counters that settle after the last callback). */
    static void eventually(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("still not true after 15 s: " + what);
            }
            Thread.sleep(20);
        }
    }

    /** {@code client} fetches every partition of {@code outputs} from {@code peer}: all intact, nothing left held. */
    static void fetchAllIntact(RdmaShuffleEngine client, java.net.InetSocketAddress peer, List<MapOutput> outputs)
            throws InterruptedException {
        List<BlockId> blocks = everyPartition(outputs);
        Collector got = new Collector(blocks.size());
        client.fetchBlocks(peer, blocks, got);
        got.await().assertAllIntact(expected(outputs, blocks));
        assertNothingLeaks(client);
    }

    /** Nothing requested, read, sent or held on either engine. */
    static void assertNothingLeaks(RdmaShuffleEngine... engines) throws InterruptedException {
        for (RdmaShuffleEngine e : engines) {
            eventually("nothing outstanding on " + e.address() + ": " + e.counters(), () -> e.counters().nothingOutstanding());
        }
    }
}
