package org.rdmashuffle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.io.RandomAccessFile;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.spark.SparkConf;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.network.shuffle.BlockFetchingListener;
import org.apache.spark.network.shuffle.BlockStoreClient;
import org.apache.spark.network.shuffle.DownloadFileManager;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.software.SoftwareProvider;

/**
 * What Spark's fetch iterator gets from the RDMA block store client, two engines on the software
 * provider in this JVM: blocks of any size as Spark's {@code ManagedBuffer}s, and fallback fetches
 * that never hold up the engine's completions.
 */
class RdmaBlockStoreClientTest {
    private static final byte[] SECRET = "client-test-secret-0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private static final String EXECUTOR = "exec-1";

    @TempDir
    Path dir;
    private SoftwareProvider serverProvider;
    private SoftwareProvider clientProvider;
    private RdmaShuffleEngine server;
    private RdmaShuffleEngine client;
    private EngineShuffleManager manager;

    @BeforeEach
    void engines() {
        EngineConfig c = EngineConfig.defaults().set(EngineConfig.KEY_FETCH_BUFFER_MEMORY, "16m");
        serverProvider = new SoftwareProvider(SoftwareProvider.Config.loopback());
        clientProvider = new SoftwareProvider(SoftwareProvider.Config.loopback());
        server = RdmaShuffleEngine.start(c, "app", SECRET, serverProvider);
        client = RdmaShuffleEngine.start(c, "app", SECRET, clientProvider);
        manager = new EngineShuffleManager(new SparkConf(false));
    }

    @AfterEach
    void close() {
        manager.fallbacks.close();
        client.close();
        server.close();
        clientProvider.close();
        serverProvider.close();
    }

    private RdmaBlockStoreClient storeClient(BlockStoreClient builtIn) {
        return new RdmaBlockStoreClient(manager, client, Map.of(EXECUTOR, server.address()), builtIn);
    }

    /** Spark's listener: keeps what arrives (retained, as Spark does) or why it failed. */
    private static final class Arrivals implements BlockFetchingListener {
        final LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();

        @Override
        public void onBlockFetchSuccess(String blockId, ManagedBuffer data) {
            queue.add(data.retain());
        }

        @Override
        public void onBlockFetchFailure(String blockId, Throwable cause) {
            queue.add(cause);
        }

        Object next() throws InterruptedException {
            Object o = queue.poll(120, TimeUnit.SECONDS);
            assertTrue(o != null, "nothing arrived");
            return o;
        }
    }

    /**
     * A block read in pieces (6 MiB and a bit, fetch buffers of 4 MiB) as one ByteBuffer: copied as its
     * pieces arrive, every byte in its place.
     */
    @Test
    void aBlockReadInPiecesIsCopiedIntoOneByteBuffer() throws Exception {
        byte[] bytes = new byte[(6 << 20) + 123];
        new java.util.Random(11).nextBytes(bytes);
        Path file = dir.resolve("shuffle_0_1_0.data");
        java.nio.file.Files.write(file, bytes);
        server.registerMapOutput(0, 1, file, new long[] {0, bytes.length});
        Arrivals arrivals = new Arrivals();
        storeClient(unused()).fetchBlocks("127.0.0.1", 1, EXECUTOR, new String[] {"shuffle_0_1_0"}, arrivals, null);
        Object got = arrivals.next();
        assertTrue(got instanceof ManagedBuffer, String.valueOf(got));
        ManagedBuffer block = (ManagedBuffer) got;
        try {
            ByteBuffer all = block.nioByteBuffer();
            byte[] copy = new byte[all.remaining()];
            all.get(copy);
            org.junit.jupiter.api.Assertions.assertArrayEquals(bytes, copy);
        } finally {
            block.release();
        }
    }

    /**
     * A 3 GiB block, a sparse file with a marker every 256 MiB: before, it failed as too large (and a
     * block over 2 GiB could not be viewed at all). Now Spark gets it as one ManagedBuffer whose stream
     * brings the pieces as they land, using 16 MiB of fetch buffers.
     */
    @Test
    void aThreeGibBlockReachesSpark() throws Exception {
        long size = (3L << 30) + 4096;
        Path file = dir.resolve("shuffle_0_0_0.data");
        long markers = 0;
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(size);
            for (long at = 0; at + 8 <= size; at += 256L << 20) {
                f.seek(at);
                f.writeLong(~at);
                markers++;
            }
        }
        server.registerMapOutput(0, 0, file, new long[] {0, size});
        Arrivals arrivals = new Arrivals();
        storeClient(unused()).fetchBlocks("127.0.0.1", 1, EXECUTOR, new String[] {"shuffle_0_0_0"}, arrivals, null);
        Object got = arrivals.next();
        assertTrue(got instanceof ManagedBuffer, String.valueOf(got));
        ManagedBuffer block = (ManagedBuffer) got;
        try {
            assertEquals(size, block.size());
            java.io.IOException notOneBuffer = org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class,
                    block::nioByteBuffer, "more than one ByteBuffer holds: refused, never truncated");
            assertTrue(notOneBuffer.getMessage().contains(size + " bytes") && notOneBuffer.getMessage().contains(
                    "(" + FetchedBlockManagedBuffer.MAX_ONE_BUFFER + ")"), notOneBuffer.getMessage());
            long read = 0;
            long seen = 0;
            byte[] chunk = new byte[1 << 20];
            try (InputStream in = block.createInputStream()) {
                for (int n; (n = in.readNBytes(chunk, 0, chunk.length)) > 0; read += n) {
                    long marker = (read + (256L << 20) - 1) / (256L << 20) * (256L << 20);
                    for (; marker + 8 <= read + n; marker += 256L << 20) {
                        assertEquals(~marker, ByteBuffer.wrap(chunk, (int) (marker - read), 8).getLong(), "marker at " + marker);
                        seen++;
                    }
                }
            }
            assertEquals(size, read, "bytes streamed");
            assertEquals(markers, seen, "markers seen");
        } finally {
            block.release();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (!client.counters().nothingOutstanding() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertTrue(client.counters().nothingOutstanding(), "left held: " + client.counters());
    }

    /**
     * A block the server refuses falls back to Spark's transport, whose client connects synchronously
     * (here: it blocks until the test ends, like a connect to a host that does not answer). Started on
     * the completion poller, it stalled every completion behind it; a block fetched meanwhile must
     * still arrive.
     */
    @Test
    void aFallbackFetchDoesNotStallThePoller() throws Exception {
        Path file = dir.resolve("shuffle_0_0_0.data");
        java.nio.file.Files.write(file, new byte[] {1, 2, 3, 4, 5, 6, 7, 8});
        server.registerMapOutput(0, 0, file, new long[] {0, 3, 8});
        CountDownLatch connecting = new CountDownLatch(1);
        CountDownLatch testOver = new CountDownLatch(1);
        BlockStoreClient hanging = new BlockStoreClient() {
            @Override
            public void fetchBlocks(String host, int port, String execId, String[] blockIds, BlockFetchingListener listener,
                                    DownloadFileManager downloadFileManager) {
                connecting.countDown();
                try {
                    testOver.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                for (String b : blockIds) {
                    listener.onBlockFetchFailure(b, new java.io.IOException("gave up connecting"));
                }
            }

            @Override
            public void close() {
            }
        };
        try {
            RdmaBlockStoreClient store = storeClient(hanging);
            Arrivals refused = new Arrivals();
            store.fetchBlocks("127.0.0.1", 1, EXECUTOR, new String[] {"shuffle_0_0_5"}, refused, null); // no partition 5
            assertTrue(connecting.await(60, TimeUnit.SECONDS), "the refused block never went to Spark's transport");
            Arrivals good = new Arrivals();
            store.fetchBlocks("127.0.0.1", 1, EXECUTOR, new String[] {"shuffle_0_0_1"}, good, null);
            Object got = good.queue.poll(30, TimeUnit.SECONDS);
            assertTrue(got instanceof ManagedBuffer, "while a fallback fetch hangs, a block over RDMA: " + got);
            ManagedBuffer b = (ManagedBuffer) got;
            try (InputStream in = b.createInputStream()) {
                org.junit.jupiter.api.Assertions.assertArrayEquals(new byte[] {4, 5, 6, 7, 8}, in.readAllBytes());
            } finally {
                b.release();
            }
        } finally {
            testOver.countDown();
        }
    }

    /** Block names are read by hand (Spark's parser runs a regex per block): the same answers as Spark's. */
    @Test
    void blockNamesParseAsSparksOwnParserReadsThem() {
        for (String name : new String[] {"shuffle_0_0_0", "shuffle_3_123456789012_7", "shuffle_1_2_3_9", "shuffle_1_2_3_",
                "shuffle_1_2", "shuffle_1__2_3", "shuffle_1_2_3_4_5", "shuffle_a_2_3", "rdd_1_2", "shuffle_1_2_3.data",
                "shuffle_1_99999999999999999999_3", "shuffle_2147483648_1_1", "shuffle_1_2_5_5", "shuffle_-1_2_3", ""}) {
            org.rdmashuffle.core.protocol.BlockId expected = null;
            try {
                org.apache.spark.storage.BlockId b = org.apache.spark.storage.BlockId.apply(name);
                if (b instanceof org.apache.spark.storage.ShuffleBlockId x) {
                    expected = org.rdmashuffle.core.protocol.BlockId.of(x.shuffleId(), x.mapId(), x.reduceId());
                } else if (b instanceof org.apache.spark.storage.ShuffleBlockBatchId x && x.endReduceId() > x.startReduceId()) {
                    expected = new org.rdmashuffle.core.protocol.BlockId(x.shuffleId(), x.mapId(), x.startReduceId(), x.endReduceId());
                }
            } catch (Exception notABlock) { // Spark throws UnrecognizedBlockId, a checked exception, from Scala
                // expected stays null
            }
            assertEquals(expected, RdmaBlockStoreClient.parse(name), name);
        }
    }

    /**
     * Reduce tasks that see the same engine locations share one client (Spark's client makes a logger
     * per instance); a task that sees another location, or another engine or built-in client, gets its own.
     */
    @Test
    void tasksSeeingTheSameEnginesShareAClient_andOthersGetTheirOwn() {
        BlockStoreClient builtIn = unused();
        java.util.HashMap<String, InetSocketAddress> seen = new java.util.HashMap<>(Map.of(EXECUTOR, server.address()));
        RdmaBlockStoreClient first = manager.blockStoreClient(client, seen, builtIn);
        seen.put("exec-2", new InetSocketAddress("127.0.0.1", 1)); // the task's own map: changing it later is no matter
        RdmaBlockStoreClient same = manager.blockStoreClient(client, new java.util.HashMap<>(Map.of(EXECUTOR, server.address())),
                builtIn);
        assertTrue(first == same, "a task seeing the same engines reuses the client");
        RdmaBlockStoreClient moved = manager.blockStoreClient(client,
                Map.of(EXECUTOR, new InetSocketAddress("127.0.0.1", server.address().getPort() + 1)), builtIn);
        assertTrue(moved != same, "an executor's engine elsewhere: a new client");
        assertTrue(manager.blockStoreClient(server, Map.of(EXECUTOR, new InetSocketAddress("127.0.0.1",
                server.address().getPort() + 1)), builtIn) != moved, "another engine: a new client");
        assertTrue(manager.blockStoreClient(server, Map.of(EXECUTOR, new InetSocketAddress("127.0.0.1",
                server.address().getPort() + 1)), unused()) != moved, "another built-in client: a new client");
    }

    /** A shared client fetches for whoever calls it: two listeners at once each get their own blocks, intact. */
    @Test
    void aSharedClientServesTwoTasksAtOnce() throws Exception {
        byte[] data = new byte[1 << 16];
        new java.util.Random(7).nextBytes(data);
        Path file = dir.resolve("shuffle_0_0_0.data");
        java.nio.file.Files.write(file, data);
        server.registerMapOutput(0, 0L, file, new long[] {0, 1000, 1 << 15, 1 << 16});
        RdmaBlockStoreClient shared = manager.blockStoreClient(client, Map.of(EXECUTOR, server.address()), unused());
        Arrivals a = new Arrivals();
        Arrivals b = new Arrivals();
        shared.fetchBlocks("127.0.0.1", 1, EXECUTOR, new String[] {"shuffle_0_0_0", "shuffle_0_0_2"}, a, null);
        shared.fetchBlocks("127.0.0.1", 1, EXECUTOR, new String[] {"shuffle_0_0_1"}, b, null);
        Object one = a.queue.poll(30, TimeUnit.SECONDS);
        Object other = a.queue.poll(30, TimeUnit.SECONDS);
        boolean inOrder = one instanceof ManagedBuffer m && m.size() == 1000; // arrival order is the engine's
        assertBytes(data, 0, 1000, inOrder ? one : other);
        assertBytes(data, 1 << 15, 1 << 16, inOrder ? other : one);
        assertBytes(data, 1000, 1 << 15, b.queue.poll(30, TimeUnit.SECONDS));
        assertEquals(null, a.queue.poll(200, TimeUnit.MILLISECONDS), "task a got only its own blocks");
        assertEquals(null, b.queue.poll(200, TimeUnit.MILLISECONDS), "task b got only its own blocks");
    }

    private static void assertBytes(byte[] data, int from, int to, Object arrived) throws Exception {
        if (!(arrived instanceof ManagedBuffer m)) {
            throw new AssertionError("expected a block of bytes [" + from + ", " + to + "), got " + arrived,
                    arrived instanceof Throwable t ? t : null);
        }
        try (InputStream in = m.createInputStream()) {
            assertTrue(java.util.Arrays.equals(java.util.Arrays.copyOfRange(data, from, to), in.readAllBytes()),
                    "bytes [" + from + ", " + to + ")");
        } finally {
            m.release();
        }
    }

    private static BlockStoreClient unused() {
        return new BlockStoreClient() {
            @Override
            public void fetchBlocks(String host, int port, String execId, String[] blockIds, BlockFetchingListener listener,
                                    DownloadFileManager downloadFileManager) {
                throw new AssertionError("Spark's transport was asked for " + String.join(", ", blockIds));
            }

            @Override
            public void close() {
            }
        };
    }
}
