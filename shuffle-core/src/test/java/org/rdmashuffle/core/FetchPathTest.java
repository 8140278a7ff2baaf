package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.client.BlockFetchException;
import org.rdmashuffle.core.client.BlockFetchListener;
import org.rdmashuffle.core.client.FetchedBlock;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.protocol.BlockId;

/**
 * The reducer's fetch path where it used to hang or fail for a block's size: the fetch buffers, the
 * queue in front of them, blocks larger than they are. Each test is named after what it provokes.
 */
class FetchPathTest {
    @TempDir
    Path dir;

    private EnginePair pair(EngineConfig client, int shuffle, int[]... maps) throws Exception {
        EnginePair pair = new EnginePair(EngineTestSupport.smallConfig(), EngineTestSupport.SECRET, client,
                EngineTestSupport.SECRET);
        for (int m = 0; m < maps.length; m++) {
            EngineTestSupport.MapOutput o = EngineTestSupport.writeMapOutput(dir, shuffle, m, maps[m], 97L * shuffle + m);
            pair.server.registerMapOutput(shuffle, m, o.file(), o.offsets());
            pair.outputs.add(o);
        }
        return pair;
    }

    /**
     * Sixteen small blocks are held by their consumer until a 512 KiB block of the same fetch arrives,
     * through a 1 MiB pool (one slab). Cut into fixed size classes, the slab belonged to the small
     * blocks' class and the large one waited for ever for a slab of its own.
     */
    @Test
    void aSizeClassWithNoFreeChunkDoesNotHang() throws Exception {
        int[] sizes = new int[17];
        java.util.Arrays.fill(sizes, 0, 16, 4 << 10);
        sizes[16] = 512 << 10;
        EngineConfig client = EngineTestSupport.smallConfig().set(EngineConfig.KEY_FETCH_BUFFER_MEMORY, "1m");
        try (EnginePair pair = pair(client, 1, sizes)) {
            List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
            Collector got = new Collector(blocks.size());
            List<FetchedBlock> held = new ArrayList<>();
            CountDownLatch large = new CountDownLatch(1);
            pair.client.fetchBlocks(pair.server.address(), blocks, new BlockFetchListener() {
                @Override
                public void onBlockFetched(FetchedBlock block) {
                    synchronized (held) {
                        held.add(block);
                        if (block.size() == (512 << 10)) {
                            large.countDown();
                        }
                    }
                }

                @Override
                public void onBlockFetchFailure(BlockId block, Throwable cause) {
                    got.onBlockFetchFailure(block, cause);
                }
            });
            assertTrue(large.await(EngineTestSupport.WAIT.toSeconds(), TimeUnit.SECONDS),
                    "the 512 KiB block never got a buffer while " + held.size() + " small blocks were held");
            EngineTestSupport.eventually("every block delivered", () -> {
                synchronized (held) {
                    return held.size() == blocks.size();
                }
            });
            synchronized (held) {
                held.forEach(got::onBlockFetched);
            }
            got.await().assertAllIntact(EngineTestSupport.expected(pair.outputs, blocks));
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    /**
     * A 2.5 MiB block through 1 MiB of fetch buffers (one slab), with a small block beside it: it comes
     * in 1 MiB pieces, streamed to its consumer as they land, each buffer reused for a later piece.
     * Before, it failed as TOO_LARGE and the adapters sent it over another transport. (Small, as the
     * emulated guest reads a few MiB a second; the pieces and their reuse are the same at any size.)
     */
    @Test
    void aBlockLargerThanFetchBufferMemoryIsDelivered() throws Exception {
        EngineConfig client = EngineTestSupport.smallConfig().set(EngineConfig.KEY_FETCH_BUFFER_MEMORY, "1m");
        try (EnginePair pair = pair(client, 2, new int[] {(5 << 19) + 12_345, 1000})) {
            List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
            Collector got = new Collector(blocks.size());
            pair.client.fetchBlocks(pair.server.address(), blocks, got);
            got.await().assertAllIntact(EngineTestSupport.expected(pair.outputs, blocks));
            assertTrue(pair.client.counters().readRequestsPosted() >= 3, "not read in pieces: "
                    + pair.client.counters().readRequestsPosted() + " read requests");
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
            // The connection carries on: the same blocks again.
            EngineTestSupport.fetchAllIntact(pair.client, pair.server.address(), pair.outputs);
        }
    }

    /**
     * A partition of more than 2 GiB (more than an int counts) starting 1000 bytes into its map output,
     * and a small partition after it, past the 2^31 mark: a sparse file with known bytes at its
     * edges, across a page boundary, across 2^31 and past it. The large block streams to its
     * consumer byte for byte (its size a long; its bytes not viewable as one buffer, said by name);
     * the small one past 2^31 is read whole, from its descriptor and then from the cached layout. The
     * other end of the same path, Spark's ManagedBuffer of a 3 GiB block starting at 0, is
     * {@code RdmaBlockStoreClientTest.aThreeGibBlockReachesSpark}.
     */
    @Test
    void aPartitionOfMoreThanTwoGib_andOnePastTheMark_arriveByteForByte() throws Exception {
        Assumptions.assumeFalse(EngineTestSupport.usesDevice(), "moves 2 GiB, which the emulated guest reads at a few MiB "
                + "a second; the path is the same on every provider");
        long big = (2L << 30) + 12_345;
        long[] offsets = {0, 1000, 1000 + big, 1000 + big + 5000};
        long[] markers = {1000, 4090, (1L << 31) - 7, (1L << 31) + 8003, offsets[2] - 16}; // the last 16 bytes end it
        Path file = dir.resolve("shuffle_6_0_0.data");
        assertTrue(java.nio.file.Files.getFileStore(dir).getUsableSpace() > 64L << 20, "no room for a sparse file");
        byte[] first = new byte[1000];
        byte[] past = new byte[5000];
        new java.util.Random(6).nextBytes(first);
        new java.util.Random(7).nextBytes(past);
        try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(offsets[3]); // sparse: a few pages on disk
            f.write(first);
            for (long at : markers) {
                f.seek(at);
                f.write(marker(at));
            }
            f.seek(offsets[2]);
            f.write(past);
        }
        // Room for twice the output: at more than half the limit registered, answers would carry no layouts.
        EngineConfig server = EngineTestSupport.smallConfig().set(EngineConfig.KEY_REGISTERED_MEMORY_LIMIT, "8g");
        try (EnginePair pair = new EnginePair(server, EngineTestSupport.SECRET, EngineTestSupport.smallConfig(),
                EngineTestSupport.SECRET)) {
            pair.server.registerMapOutput(6, 0, file, offsets);
            java.util.concurrent.atomic.AtomicInteger requests = EngineTestSupport.countFetchRequests(pair);
            BlockId head = BlockId.of(6, 0, 0);
            BlockId large = BlockId.of(6, 0, 1);
            BlockId tail = BlockId.of(6, 0, 2);
            Collector small = new Collector(2);
            pair.client.fetchBlocks(pair.server.address(), List.of(head, tail), small);
            small.await().assertAllIntact(Map.of(head, first, tail, past));
            int asked = requests.get();
            Collector again = new Collector(1);
            pair.client.fetchBlocks(pair.server.address(), List.of(tail), again);
            again.await().assertAllIntact(Map.of(tail, past));
            assertEquals(asked, requests.get(), "read again from the layout, with no request");

            java.util.concurrent.CompletableFuture<Object> checked = new java.util.concurrent.CompletableFuture<>();
            pair.client.fetchBlocks(pair.server.address(), List.of(large), new BlockFetchListener() {
                @Override
                public void onBlockFetched(FetchedBlock block) {
                    // Read in pieces: its stream waits for pieces the poller (this thread) delivers.
                    Thread.ofVirtual().start(() -> {
                        try {
                            checked.complete(checkLargeBlock(block, offsets[1], markers));
                        } catch (Throwable t) {
                            checked.completeExceptionally(t);
                        } finally {
                            block.release();
                        }
                    });
                }

                @Override
                public void onBlockFetchFailure(BlockId block, Throwable cause) {
                    checked.completeExceptionally(cause);
                }
            });
            assertEquals(big, checked.get(120, TimeUnit.SECONDS), "bytes streamed");
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    /** 16 bytes that say where they are: the file offset, then its complement. */
    private static byte[] marker(long at) {
        return java.nio.ByteBuffer.allocate(16).putLong(at).putLong(~at).array();
    }

    /**
     * Checks a block that starts at file offset {@code from}: a long size, no view as one buffer, and
     * its stream (read in 1 MiB chunks) zero but for {@code markers}; returns the bytes streamed.
     */
    private static long checkLargeBlock(FetchedBlock block, long from, long[] markers) throws java.io.IOException {
        assertFalse(block.isContiguous(), "read in pieces");
        IllegalStateException notOneBuffer = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
                block::asByteBuffer);
        assertTrue(notOneBuffer.getMessage().contains(block.size() + " bytes") && notOneBuffer.getMessage().contains(
                "openStream"), notOneBuffer.getMessage());
        byte[] chunk = new byte[1 << 20];
        byte[] want = new byte[chunk.length];
        long read = 0;
        try (java.io.InputStream in = block.openStream()) {
            for (int n; (n = in.readNBytes(chunk, 0, chunk.length)) > 0; read += n) {
                long at = from + read; // the file offset of chunk[0]
                java.util.Arrays.fill(want, 0, n, (byte) 0);
                for (long m : markers) {
                    byte[] mark = marker(m);
                    for (int i = 0; i < mark.length; i++) {
                        long p = m + i - at;
                        if (p >= 0 && p < n) {
                            want[(int) p] = mark[i];
                        }
                    }
                }
                if (!java.util.Arrays.equals(chunk, 0, n, want, 0, n)) {
                    int i = java.util.Arrays.mismatch(chunk, 0, n, want, 0, n);
                    throw new AssertionError("byte at file offset " + (at + i) + " is " + chunk[i] + ", expected " + want[i]);
                }
            }
        }
        return read;
    }

    /**
     * A reducer's share twenty times its fetch buffers (1 MiB, one slab), asked for in one call: 256
     * blocks of up to 160 KiB and one of 3 MiB. Every block arrives intact through the one slab, and
     * the fetch memory stays bounded: the engine registers no fetch buffer beyond its first slab (the
     * pool never deregisters one while the engine runs, so the bytes registered are the most it ever
     * held), and the bytes of reads in flight -- the in-flight bounds are 32 and 64 MiB here -- never
     * exceed the buffers they land in.
     */
    @Test
    void aShareTwentyTimesTheFetchBuffers_arrivesThroughThemAlone() throws Exception {
        long buffers = 1 << 20;
        EngineConfig client = EngineTestSupport.smallConfig().set(EngineConfig.KEY_FETCH_BUFFER_MEMORY, Long.toString(buffers));
        java.util.Random random = new java.util.Random(52);
        int[][] maps = new int[4][64];
        for (int[] m : maps) {
            for (int p = 0; p < m.length; p++) {
                m[p] = random.nextInt(8) == 0 ? 0 : 1 + random.nextInt(EngineTestSupport.size(160 << 10));
            }
        }
        maps[2][17] = EngineTestSupport.size(3 << 20); // larger than every fetch buffer: read in pieces
        long share = java.util.Arrays.stream(maps).flatMapToInt(java.util.Arrays::stream).asLongStream().sum();
        assertTrue(share >= EngineTestSupport.size(20 << 20), "the share is twenty times the buffers: " + share);
        try (EnginePair pair = pair(client, 5, maps)) {
            EngineTestSupport.fetchAllIntact(pair.client, pair.server.address(), pair.outputs);
            var registered = pair.client.metrics().bufferRegistrations();
            assertEquals(1, registered.count(), "fetch buffer slabs registered: " + registered);
            assertEquals(buffers, registered.bytes(), "fetch buffer bytes registered");
            long peak = pair.client.counters().peakBytesInFlight();
            assertTrue(peak > 0 && peak <= buffers, "peak bytes of reads in flight " + peak + ", fetch buffers " + buffers);
            assertEquals(share, pair.client.metrics().fetches().bytes(), "every byte of the share delivered");
        }
    }

    /**
     * A consumer keeps the block that fills the fetch buffers; the next block waits for a buffer. Its
     * wait is bounded by the fetch timeout like a request's: it fails by name, the held block and the
     * connection are unharmed, and once the buffer is back the block is fetched.
     */
    @Test
    @Tag(EngineTestSupport.TIMING)
    void readsQueuedForBuffersTimeOut() throws Exception {
        Assumptions.assumeFalse(EngineTestSupport.usesDevice(), "waits out a 2 s fetch timeout: too tight for the "
                + "emulated guest; the logic is the same on every provider");
        EngineConfig client = EngineTestSupport.smallConfig().set(EngineConfig.KEY_FETCH_BUFFER_MEMORY, "1m")
                .set(EngineConfig.KEY_FETCH_TIMEOUT, "2s");
        try (EnginePair pair = pair(client, 3, new int[] {1 << 20}, new int[] {64 << 10})) {
            BlockId filling = BlockId.of(3, 0, 0);
            BlockId waiting = BlockId.of(3, 1, 0);
            Map<BlockId, Object> outcome = new ConcurrentHashMap<>();
            CountDownLatch both = new CountDownLatch(2);
            BlockFetchListener keep = new BlockFetchListener() {
                @Override
                public void onBlockFetched(FetchedBlock block) {
                    outcome.put(block.id(), block);
                    both.countDown();
                }

                @Override
                public void onBlockFetchFailure(BlockId block, Throwable cause) {
                    outcome.put(block, cause);
                    both.countDown();
                }
            };
            pair.client.fetchBlocks(pair.server.address(), List.of(filling), keep);
            EngineTestSupport.eventually("the first block arrives", () -> outcome.containsKey(filling));
            long start = System.nanoTime();
            pair.client.fetchBlocks(pair.server.address(), List.of(waiting), keep);
            assertTrue(both.await(30, TimeUnit.SECONDS), "the read waiting for a buffer never timed out");
            long waitedMs = (System.nanoTime() - start) / 1_000_000;
            Object w = outcome.get(waiting);
            assertTrue(w instanceof BlockFetchException e && e.kind() == BlockFetchException.Kind.FAILED
                    && e.getMessage().contains("for a fetch buffer") && e.getMessage().contains(waiting.toString()),
                    String.valueOf(w));
            assertTrue(waitedMs >= 1900, "failed after " + waitedMs + " ms, before the 2 s timeout");
            FetchedBlock kept = (FetchedBlock) outcome.get(filling);
            assertEquals(1 << 20, kept.size());
            kept.release();
            assertEquals(1, pair.client.counters().fetchConnections(), "the timeout did not cost the connection");
            EngineTestSupport.fetchAllIntact(pair.client, pair.server.address(), pair.outputs);
        }
    }

    /**
     * Registering fetch buffer memory fails (ibv_reg_mr out of pinnable memory): the reads that needed a
     * new slab fail by name, and nothing is left held -- no budget, no buffer, no queued read. Once
     * registration works again, the same blocks arrive.
     *
     * <p>The first slab is taken whole by a block held throughout, so every other read needs a new slab
     * whatever the timing (released as they came, small blocks could free room before a read asked, and
     * nothing failed: seen in a Soft-RoCE guest). And the failure must not outlive the reads it was for:
     * a pool that kept it failed a fetch made after registration worked again (also seen there).
     */
    @Test
    void anAllocationFailureLeaksNothing() throws Exception {
        int slab = 4 << 20; // the engine's slab: 32 MiB of fetch buffers in slabs of 4 MiB
        try (EnginePair pair = pair(EngineTestSupport.smallConfig(), 4, new int[] {100_000, 200_000, 0, 3000},
                new int[] {slab, 5 << 20, 10})) {
            BlockId whole = BlockId.of(4, 1, 0);
            Map<BlockId, Object> first = fetchEach(pair, List.of(whole));
            FetchedBlock holding = (FetchedBlock) first.get(whole);
            assertTrue(holding.isContiguous() && pair.client.counters().fetchBuffersOutstanding() == 1,
                    "the held block is one buffer, the whole first slab: " + pair.client.counters());

            List<BlockId> others = new ArrayList<>(EngineTestSupport.everyPartition(pair.outputs));
            others.remove(whole);
            pair.client.failFetchBufferRegistrations(new IllegalStateException("ibv_reg_mr failed: errno 12 (ENOMEM)"));
            Map<BlockId, Object> outcome = fetchEach(pair, others);
            for (BlockId b : others) {
                Object o = outcome.get(b);
                if (b.equals(BlockId.of(4, 0, 2))) {
                    assertTrue(o instanceof FetchedBlock f && f.size() == 0, b + " is empty: it needs no buffer, got " + o);
                    ((FetchedBlock) o).release();
                    continue;
                }
                assertTrue(o instanceof Throwable t && t.getMessage().contains("registering fetch buffer memory failed")
                        && t.getMessage().contains("ENOMEM") && t.getMessage().contains(b.toString()),
                        b + ": " + o);
            }
            holding.release();
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
            pair.client.failFetchBufferRegistrations(null);
            EngineTestSupport.fetchAllIntact(pair.client, pair.server.address(), pair.outputs);
        }
    }

    /** Fetches {@code blocks} and waits for every outcome: the block (not read, not released) or the failure. */
    private static Map<BlockId, Object> fetchEach(EnginePair pair, List<BlockId> blocks) throws InterruptedException {
        Map<BlockId, Object> outcome = new ConcurrentHashMap<>();
        pair.client.fetchBlocks(pair.server.address(), blocks, new BlockFetchListener() {
            @Override
            public void onBlockFetched(FetchedBlock block) {
                outcome.put(block.id(), block);
            }

            @Override
            public void onBlockFetchFailure(BlockId block, Throwable cause) {
                outcome.put(block, cause);
            }
        });
        EngineTestSupport.eventually("an outcome for each of " + blocks, () -> outcome.size() == blocks.size());
        return outcome;
    }
}
