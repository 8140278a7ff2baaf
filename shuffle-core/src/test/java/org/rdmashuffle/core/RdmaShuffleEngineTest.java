package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.protocol.BlockId;

/** The engine end to end, two engines in one JVM: what a reducer asks for arrives intact, within the bounds. */
class RdmaShuffleEngineTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(EngineConfig.PostPath.class)
    void everyBlockArrivesIntact_onEitherPostPath(EngineConfig.PostPath path) throws Exception {
        EngineConfig c = EngineTestSupport.smallConfig().set(EngineConfig.KEY_POST_PATH, path.name());
        try (EnginePair pair = new EnginePair(c, EngineTestSupport.SECRET, c, EngineTestSupport.SECRET)
                .withOutputs(dir, 3, 4, 16, EngineTestSupport.size(40_000))) {
            // Single partitions of a map sit next to each other: they coalesce into multi-SGE reads.
            List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
            Collector got = new Collector(blocks.size());
            pair.client.fetchBlocks(pair.server.address(), blocks, got);
            got.await().assertAllIntact(EngineTestSupport.expected(pair.outputs, blocks));
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
            EngineCounters counters = pair.client.counters();
            assertEquals(1, counters.fetchConnections());
            assertTrue(counters.readRequestsPosted() < counters.blocksRead(), "no contiguous blocks were coalesced: "
                    + counters.readRequestsPosted() + " requests for " + counters.blocksRead() + " blocks");
        }
    }

    @Test
    void batchRangesAndEmptyBlocks_areServed() throws Exception {
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 1, 3, 10, EngineTestSupport.size(20_000))) {
            List<BlockId> blocks = new ArrayList<>();
            for (int m = 0; m < 3; m++) {
                blocks.add(new BlockId(1, m, 0, 10)); // the whole output
                blocks.add(new BlockId(1, m, 2, 5));
            }
            Path empty = java.nio.file.Files.write(dir.resolve("empty.data"), new byte[0]);
            pair.server.registerMapOutput(1, 99, empty, new long[] {0, 0});
            blocks.add(BlockId.of(1, 99, 0));
            Collector got = new Collector(blocks.size());
            pair.client.fetchBlocks(pair.server.address(), blocks, got);
            got.await();
            assertEquals(0, got.fetched.get(BlockId.of(1, 99, 0)).length);
            got.assertAllIntact(EngineTestSupport.expected(pair.outputs, blocks.subList(0, 6)));
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    @Test
    void bytesInFlightStayWithinTheBound_andConnectionsAreReused() throws Exception {
        EngineConfig c = EngineTestSupport.smallConfig().set(EngineConfig.KEY_MAX_BYTES_IN_FLIGHT_PER_PEER, "512k")
                .set(EngineConfig.KEY_MAX_CHAINS_IN_FLIGHT_PER_PEER, "2").set(EngineConfig.KEY_MAX_BYTES_IN_FLIGHT, "1m")
                .set(EngineConfig.KEY_CHAIN_LENGTH, "4").set(EngineConfig.KEY_QPS_PER_PEER, "3");
        try (EnginePair pair = new EnginePair(c, EngineTestSupport.SECRET, c, EngineTestSupport.SECRET)
                .withOutputs(dir, 2, 8, 8, EngineTestSupport.size(64 << 10))) {
            List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
            for (int round = 0; round < 3; round++) {
                Collector got = new Collector(blocks.size());
                pair.client.fetchBlocks(pair.server.address(), blocks, got);
                got.await().assertAllIntact(EngineTestSupport.expected(pair.outputs, blocks));
            }
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
            EngineCounters counters = pair.client.counters();
            assertTrue(counters.peakBytesInFlight() > 0 && counters.peakBytesInFlight() <= 512 << 10,
                    "peak bytes in flight " + counters.peakBytesInFlight() + " over the per-peer bound of 512 KiB");
            assertEquals(1, counters.fetchConnections(), "three rounds, one connection");
            assertEquals(1, pair.server.counters().servingConnections());
        }
    }

    @Test
    void anUnknownMapOutputFailsItsRequest_andTheConnectionCarriesOn() throws Exception {
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 5, 2, 4, EngineTestSupport.size(10_000))) {
            BlockId missing = BlockId.of(5, 42, 0);
            Collector bad = new Collector(1);
            pair.client.fetchBlocks(pair.server.address(), List.of(missing), bad);
            bad.await();
            Throwable e = bad.failed.get(missing);
            assertTrue(e.getMessage().contains(missing + ": no such map output") && e.getMessage().contains(
                    pair.server.address().getPort() + ""), e.getMessage());
            List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
            Collector good = new Collector(blocks.size());
            pair.client.fetchBlocks(pair.server.address(), blocks, good);
            good.await().assertAllIntact(EngineTestSupport.expected(pair.outputs, blocks));
            assertEquals(1, pair.server.counters().servingConnections(), "the refusal did not cost the connection");
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    /**
     * An executor's engine asked for an output it never registered -- one a decommissioned executor moved
     * to it -- finds it through its resolver on the first request, serves it, and looks no more.
     */
    @Test
    void anOutputMovedToAnExecutor_isFoundByItsEnginesResolver_andServed() throws Exception {
        try (EnginePair pair = EnginePair.open()) {
            EngineTestSupport.MapOutput moved = EngineTestSupport.writeMapOutput(dir, 2, 17, 4, 5000, 17);
            java.util.concurrent.atomic.AtomicInteger searches = new java.util.concurrent.atomic.AtomicInteger();
            pair.server.resolver((app, shuffle, map) -> {
                searches.incrementAndGet();
                assertEquals(org.rdmashuffle.core.server.MapOutputRegistry.OWN, app, "an executor's engine serves its own");
                return shuffle == 2 && map == 17 ? new org.rdmashuffle.core.server.MapOutputRegistry.ResolvedOutput(
                        org.rdmashuffle.core.server.files.OutputFile.trusted(moved.file()), moved.offsets(), null) : null;
            });
            List<BlockId> blocks = EngineTestSupport.everyPartition(List.of(moved));
            for (int round = 0; round < 2; round++) {
                Collector got = new Collector(blocks.size());
                pair.client.fetchBlocks(pair.server.address(), blocks, got);
                got.await().assertAllIntact(EngineTestSupport.expected(List.of(moved), blocks));
            }
            assertEquals(1, searches.get(), "found once, then known");
            BlockId notHere = BlockId.of(2, 18, 0);
            Collector bad = new Collector(1);
            pair.client.fetchBlocks(pair.server.address(), List.of(notHere), bad);
            bad.await();
            assertTrue(bad.failed.get(notHere).getMessage().contains(notHere + ": no such map output"),
                    bad.failed.get(notHere).getMessage());
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    @Test
    void anIdleEngineSleepsOnTheCompletionChannel() throws Exception {
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 6, 1, 4, EngineTestSupport.size(1000))) {
            List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
            Collector got = new Collector(blocks.size());
            pair.client.fetchBlocks(pair.server.address(), blocks, got);
            got.await();
            Thread.sleep(300); // past the busy-poll window
            ThreadMXBean mx = ManagementFactory.getThreadMXBean();
            long before = pollerCpuNanos(mx);
            long sleepsBefore = pair.client.counters().pollerSleeps();
            Thread.sleep(2500); // an idle poller sleeps until woken (a timed sleep of a second would sleep again twice)
            long used = pollerCpuNanos(mx) - before;
            long sleepsAfter = pair.client.counters().pollerSleeps();
            assertTrue(sleepsAfter > 0, "the poller never slept");
            assertTrue(sleepsAfter - sleepsBefore <= 1, "an idle poller went to sleep " + (sleepsAfter - sleepsBefore)
                    + " times in 2.5 s: it wakes without work");
            // Four poller threads idle for 2.5 s: sleeping, they use a few milliseconds at most.
            assertTrue(used < 200_000_000L, "idle pollers used " + used / 1_000_000 + " ms of CPU in 2.5 s");
        }
    }

    private static long pollerCpuNanos(ThreadMXBean mx) {
        long total = 0;
        for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
            if (e.getKey().getName().startsWith("rdma-shuffle-poller")) {
                total += Math.max(0, mx.getThreadCpuTime(e.getKey().threadId()));
            }
        }
        return total;
    }

    @Test
    void closingWithFetchesUnderWay_failsThemAndReturnsPromptly() throws Exception {
        EngineConfig c = EngineTestSupport.smallConfig().set(EngineConfig.KEY_MAX_BYTES_IN_FLIGHT_PER_PEER, "256k")
                .set(EngineConfig.KEY_MAX_CHAINS_IN_FLIGHT_PER_PEER, "1");
        EnginePair pair = new EnginePair(c, EngineTestSupport.SECRET, c, EngineTestSupport.SECRET)
                .withOutputs(dir, 7, 8, 16, EngineTestSupport.size(64 << 10));
        List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
        Collector got = new Collector(blocks.size());
        pair.client.fetchBlocks(pair.server.address(), blocks, got);
        long start = System.nanoTime();
        pair.close();
        long tookMs = (System.nanoTime() - start) / 1_000_000;
        got.await(); // every block answered: fetched before the close, or failed by it
        assertEquals(blocks.size(), got.fetched.size() + got.failed.size());
        assertTrue(tookMs < 15_000, "close took " + tookMs + " ms");
    }

    /**
     * Blocks of many sizes through the smallest fetch pool (1 MiB, one slab), each held by its
     * listener for a while: whichever size comes next is cut from the slab's free space, and a chain
     * posts the reads that got buffers rather than waiting for a release that nothing would make.
     */
    @Test
    void blocksOfMixedSizesThroughASmallFetchPoolAllArrive() throws Exception {
        EngineConfig client = EngineTestSupport.smallConfig().set(EngineConfig.KEY_FETCH_BUFFER_MEMORY, "1m");
        try (EnginePair pair = new EnginePair(EngineTestSupport.smallConfig(), EngineTestSupport.SECRET, client,
                EngineTestSupport.SECRET).withOutputs(dir, 1, 2, 8, EngineTestSupport.size(256 << 10))) {
            fetchAllHoldingEachBlock(pair, 100);
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    /**
     * The reducer's buffers are held by its consumer, so described reads wait in the queue for longer
     * than the server's lease on their regions (one fetch timeout, half of which is past): each such
     * block is described again before it is read, not read from a region the server may have released.
     */
    @Test
    @org.junit.jupiter.api.Tag(EngineTestSupport.TIMING)
    void aReadQueuedPastHalfTheLeaseIsDescribedAgain() throws Exception {
        Assumptions.assumeFalse(EngineTestSupport.usesDevice(), "holds blocks for seconds against a 2 s timeout: "
                + "too tight for the emulated guest; the logic is the same on every provider");
        EngineConfig client = EngineTestSupport.smallConfig().set(EngineConfig.KEY_FETCH_BUFFER_MEMORY, "1m")
                .set(EngineConfig.KEY_FETCH_TIMEOUT, "2s");
        try (EnginePair pair = new EnginePair(EngineTestSupport.smallConfig(), EngineTestSupport.SECRET, client,
                EngineTestSupport.SECRET).withOutputs(dir, 1, 1, 16, 256 << 10)) {
            java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
            pair.client.tamper(new RdmaShuffleEngine.Tamper() {
                @Override
                public org.rdmashuffle.core.protocol.Message message(org.rdmashuffle.core.transport.DataConnection.Role role,
                                                                     org.rdmashuffle.core.protocol.Message m) {
                    if (m instanceof org.rdmashuffle.core.protocol.Message.FetchRequest r) {
                        asked.addAndGet(r.blocks().size());
                    }
                    return m;
                }
            });
            // Each block is kept 1.5 s before its buffer goes back: the 1 MiB pool holds a few, so the last
            // blocks wait past half the 2 s lease for a buffer.
            List<BlockId> blocks = fetchAllHoldingEachBlock(pair, 1500);
            assertTrue(asked.get() > blocks.size(), "no block was described again: " + asked.get() + " asked for "
                    + blocks.size() + " blocks");
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    /**
     * Fetches every partition of the pair's outputs with a consumer that keeps each block (and its
     * fetch buffer) for {@code holdMillis} before taking it; checks all arrive intact; returns them.
     */
    private static List<BlockId> fetchAllHoldingEachBlock(EnginePair pair, long holdMillis) throws InterruptedException {
        List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
        Collector got = new Collector(blocks.size());
        java.util.concurrent.ScheduledExecutorService later = java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
        try {
            pair.client.fetchBlocks(pair.server.address(), blocks, new org.rdmashuffle.core.client.BlockFetchListener() {
                @Override
                public void onBlockFetched(org.rdmashuffle.core.client.FetchedBlock block) {
                    later.schedule(() -> got.onBlockFetched(block), holdMillis, java.util.concurrent.TimeUnit.MILLISECONDS);
                }

                @Override
                public void onBlockFetchFailure(BlockId block, Throwable cause) {
                    got.onBlockFetchFailure(block, cause);
                }
            });
            got.await().assertAllIntact(EngineTestSupport.expected(pair.outputs, blocks));
        } finally {
            later.shutdownNow();
        }
        return blocks;
    }
}
