package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.client.BlockFetchException;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.transport.DataConnection;

/**
 * One round trip per block: the first request for a map output brings its whole layout back, and
 * the reducer reads the output's other blocks with no request message -- until the output is lost,
 * its shuffle unregistered, or the layout too old; a layout gone stale fails as a fetch failure.
 */
class LayoutCacheFetchTest {
    @TempDir
    Path dir;

    /** Writes map output 0 of {@code shuffle} (four partitions, bytes from {@code seed}) in {@code in} and registers it on the server. */
    private static EngineTestSupport.MapOutput registerOutput(EnginePair pair, Path in, int shuffle, long seed) throws Exception {
        EngineTestSupport.MapOutput o = EngineTestSupport.writeMapOutput(in, shuffle, 0, new int[] {5000, 6000, 7000, 8000}, seed);
        pair.server.registerMapOutput(shuffle, 0, o.file(), o.offsets());
        return o;
    }

    private static byte[] fetchOne(EnginePair pair, BlockId b) throws InterruptedException {
        Collector got = new Collector(1);
        pair.client.fetchBlocks(pair.server.address(), List.of(b), got);
        got.await();
        if (got.failed.containsKey(b)) {
            throw new AssertionError(b + " failed", got.failed.get(b));
        }
        return got.fetched.get(b);
    }

    @Test
    void afterTheFirstTouchOfAMapOutputEachFetchIsOneRoundTrip() throws Exception {
        int[] sizes = {3000, 0, 7000, 100, 4096, 1, 20_000, 5000};
        try (EnginePair pair = EnginePair.open()) {
            EngineTestSupport.MapOutput o = EngineTestSupport.writeMapOutput(dir, 1, 0, sizes, 11);
            pair.server.registerMapOutput(1, 0, o.file(), o.offsets());
            AtomicInteger requests = EngineTestSupport.countFetchRequests(pair);
            assertArrayEquals(o.bytes(BlockId.of(1, 0, 0)), fetchOne(pair, BlockId.of(1, 0, 0)));
            assertEquals(1, requests.get(), "the first touch asks");
            for (int p = 1; p < sizes.length; p++) {
                BlockId b = BlockId.of(1, 0, p);
                assertArrayEquals(o.bytes(b), fetchOne(pair, b), b.toString());
            }
            BlockId batch = new BlockId(1, 0, 2, 7);
            assertArrayEquals(o.bytes(batch), fetchOne(pair, batch), "a batch of contiguous partitions");
            assertEquals(1, requests.get(), "no request after the first touch: " + requests.get() + " requests");
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    /**
     * The server forgets the output after the reducer cached its layout, and registers different bytes
     * under the same ids. A read through the stale layout names a region no longer registered: the
     * device refuses it, the block fails as a fetch failure (never the new output's bytes), and the next
     * fetch, on a new connection, asks afresh and gets the new bytes.
     */
    @Test
    void aStaleCachedDescriptorFailsAsFetchFailure() throws Exception {
        try (EnginePair pair = EnginePair.open()) {
            EngineTestSupport.MapOutput old = registerOutput(pair, dir, 2, 21);
            assertArrayEquals(old.bytes(BlockId.of(2, 0, 0)), fetchOne(pair, BlockId.of(2, 0, 0)));
            pair.server.unregisterShuffle(2); // its region is deregistered at once
            EngineTestSupport.MapOutput replaced = registerOutput(pair, Files.createDirectories(dir.resolve("other")), 2, 22);
            // Another reducer (the serving engine, fetching from itself) has the replacement registered.
            Collector registering = new Collector(1);
            pair.server.fetchBlocks(pair.server.address(), List.of(BlockId.of(2, 0, 3)), registering);
            registering.await().assertAllIntact(java.util.Map.of(BlockId.of(2, 0, 3), replaced.bytes(BlockId.of(2, 0, 3))));

            BlockId b = BlockId.of(2, 0, 1);
            Collector got = new Collector(1);
            pair.client.fetchBlocks(pair.server.address(), List.of(b), got);
            got.await();
            assertTrue(!got.fetched.containsKey(b), "bytes delivered through a stale layout: "
                    + (java.util.Arrays.equals(got.fetched.get(b), replaced.bytes(b)) ? "the replacement's" : "someone's"));
            Throwable e = got.failed.get(b);
            assertTrue(e instanceof BlockFetchException f && f.kind() == BlockFetchException.Kind.FAILED
                    && e.getMessage().contains(b.toString()), String.valueOf(e));
            EngineTestSupport.assertNothingLeaks(pair.client);
            assertArrayEquals(replaced.bytes(b), fetchOne(pair, b), "asked afresh on a new connection");
        }
    }

    /**
     * The adapter says an output is lost (a FetchFailed for it) and the server has new bytes under the
     * same ids: the next fetch asks again (one more request) and gets them. Unregistering the shuffle
     * forgets its layouts too.
     */
    @Test
    void aLostOutputInvalidatesTheCache() throws Exception {
        try (EnginePair pair = EnginePair.open()) {
            EngineTestSupport.MapOutput old = registerOutput(pair, dir, 3, 31);
            AtomicInteger requests = EngineTestSupport.countFetchRequests(pair);
            assertArrayEquals(old.bytes(BlockId.of(3, 0, 0)), fetchOne(pair, BlockId.of(3, 0, 0)));
            assertArrayEquals(old.bytes(BlockId.of(3, 0, 1)), fetchOne(pair, BlockId.of(3, 0, 1)));
            assertEquals(1, requests.get());

            EngineTestSupport.MapOutput replaced = registerOutput(pair, Files.createDirectories(dir.resolve("other")), 3, 32);
            pair.client.forgetOutput(3, 0);
            assertArrayEquals(replaced.bytes(BlockId.of(3, 0, 2)), fetchOne(pair, BlockId.of(3, 0, 2)),
                    "after the output was declared lost, the new bytes");
            assertEquals(2, requests.get(), "asked again after the loss");
            assertArrayEquals(replaced.bytes(BlockId.of(3, 0, 3)), fetchOne(pair, BlockId.of(3, 0, 3)));
            assertEquals(2, requests.get(), "and the new layout is used");

            pair.client.unregisterShuffle(3);
            assertArrayEquals(replaced.bytes(BlockId.of(3, 0, 0)), fetchOne(pair, BlockId.of(3, 0, 0)));
            assertEquals(3, requests.get(), "an unregistered shuffle's layouts are forgotten");
            assertEquals(1, pair.client.counters().fetchConnections(), "none of this cost the connection");
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    /**
     * A reducer with small receive buffers (4 KiB), map ids as large as they come (nine-byte varints)
     * and outputs of 1,000 partitions: an answer of 70 descriptors plus one layout outgrows the buffer,
     * and the server leaves the layout out rather than fail the answer; every block arrives.
     */
    @Test
    void layoutsThatDoNotFitTheReducersReceiveBufferAreLeftOut() throws Exception {
        try (EnginePair pair = withReceiveBuffersOf("4k")) {
            int[] sizes = new int[1000];
            java.util.Arrays.fill(sizes, 1000);
            int maps = 4;
            for (int m = 0; m < maps; m++) {
                long id = Long.MAX_VALUE - m;
                EngineTestSupport.MapOutput o = EngineTestSupport.writeMapOutput(dir, 4, id, sizes, 40 + m);
                pair.server.registerMapOutput(4, id, o.file(), o.offsets());
                pair.outputs.add(o);
            }
            List<BlockId> blocks = new java.util.ArrayList<>();
            for (int p = 128; p < sizes.length; p++) { // a reduce stage's order: partition p of every map
                for (int m = 0; m < maps; m++) {
                    blocks.add(BlockId.of(4, Long.MAX_VALUE - m, p));
                }
            }
            Collector got = new Collector(blocks.size());
            pair.client.fetchBlocks(pair.server.address(), blocks, got);
            got.await().assertAllIntact(EngineTestSupport.expected(pair.outputs, blocks));
            assertEquals(1, pair.client.counters().fetchConnections(), "no answer broke the connection");
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    /**
     * A reduce stage's first fetches all name the same outputs, and come before any answer is back.
     * Only the first sends a request: the others' blocks wait for the layouts it asked for and are
     * read from them. One request, each output's layout sent once (not once per request: it is the
     * biggest thing in an answer), every block intact.
     */
    @Test
    void fetchesMadeTogetherSendOneRequestForTheOutputsTheyShare() throws Exception {
        try (EnginePair pair = EnginePair.open()) {
            List<Long> maps = List.of(0L, 1L, 2L);
            registerOutputs(pair, 5, maps, 16, 3000);
            AtomicInteger requests = new AtomicInteger();
            AtomicInteger asking = new AtomicInteger();
            pair.client.tamper(new RdmaShuffleEngine.Tamper() {
                @Override
                public Message message(DataConnection.Role role, Message m) {
                    if (m instanceof Message.FetchRequest r) {
                        requests.incrementAndGet();
                        if (r.withLayouts()) {
                            asking.incrementAndGet();
                        }
                    }
                    return m;
                }
            });
            AtomicInteger layoutsSent = countLayoutsSent(pair);
            awaitIntact(pair, fetchTogether(pair, 5, maps, 16), 5, maps); // one fetch per reducer: partition p of every map
            assertEquals(1, requests.get(), "requests sent");
            assertEquals(1, asking.get(), "requests that asked for layouts");
            assertEquals(maps.size(), layoutsSent.get(), "layouts sent: one per output");
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    /** Writes and registers output m of {@code shuffle} for each of {@code maps}: {@code partitions} of {@code bytes} each. */
    private void registerOutputs(EnginePair pair, int shuffle, List<Long> maps, int partitions, int bytes) throws Exception {
        int[] sizes = new int[partitions];
        java.util.Arrays.fill(sizes, bytes);
        for (long m : maps) {
            EngineTestSupport.MapOutput o = EngineTestSupport.writeMapOutput(dir, shuffle, m, sizes, 10 * shuffle + (int) m);
            pair.server.registerMapOutput(shuffle, m, o.file(), o.offsets());
            pair.outputs.add(o);
        }
    }

    /** Counts, by output, the layouts the server's answers carry. */
    private static java.util.Map<Long, Integer> countLayoutsByOutput(EnginePair pair) {
        java.util.Map<Long, Integer> sent = new java.util.concurrent.ConcurrentHashMap<>();
        pair.server.tamper(new RdmaShuffleEngine.Tamper() {
            @Override
            public Message message(DataConnection.Role role, Message m) {
                if (m instanceof Message.FetchResponse r) {
                    r.layouts().forEach(l -> sent.merge(l.mapId(), 1, Integer::sum));
                }
                return m;
            }
        });
        return sent;
    }

    /** Counts the layouts the server's answers carry. */
    private static AtomicInteger countLayoutsSent(EnginePair pair) {
        AtomicInteger sent = new AtomicInteger();
        pair.server.tamper(new RdmaShuffleEngine.Tamper() {
            @Override
            public Message message(DataConnection.Role role, Message m) {
                if (m instanceof Message.FetchResponse r) {
                    sent.addAndGet(r.layouts().size());
                }
                return m;
            }
        });
        return sent;
    }

    /** Waits for fetch p (partition p of every map) of each of {@code fetches}; every block intact. */
    private static void awaitIntact(EnginePair pair, List<Collector> fetches, int shuffle, List<Long> maps)
            throws InterruptedException {
        for (int p = 0; p < fetches.size(); p++) {
            List<BlockId> blocks = new java.util.ArrayList<>();
            for (long m : maps) {
                blocks.add(BlockId.of(shuffle, m, p));
            }
            fetches.get(p).await().assertAllIntact(EngineTestSupport.expected(pair.outputs, blocks));
        }
    }

    /** {@code reducers} fetches of partition p of every output in {@code maps}, made together; one collector per fetch. */
    private static List<Collector> fetchTogether(EnginePair pair, int shuffle, List<Long> maps, int reducers) {
        List<Collector> all = new java.util.ArrayList<>();
        for (int p = 0; p < reducers; p++) {
            List<BlockId> blocks = new java.util.ArrayList<>();
            for (long m : maps) {
                blocks.add(BlockId.of(shuffle, m, p));
            }
            Collector got = new Collector(blocks.size());
            all.add(got);
            pair.client.fetchBlocks(pair.server.address(), blocks, got);
        }
        return all;
    }

    /**
     * The request that asked for the layouts is never answered (the server's answers are lost). The
     * blocks of the fetches that waited for those layouts fail with it, once each, naming the
     * timeout: none is left waiting for a layout that will not come.
     */
    @Test
    void blocksWaitingForALayoutThatNeverComesFailWithTheRequest() throws Exception {
        org.rdmashuffle.core.config.EngineConfig quick = EngineTestSupport.smallConfig()
                .set(org.rdmashuffle.core.config.EngineConfig.KEY_FETCH_TIMEOUT, "2s");
        try (EnginePair pair = new EnginePair(EngineTestSupport.smallConfig(), EngineTestSupport.SECRET, quick,
                EngineTestSupport.SECRET)) {
            registerOutputs(pair, 6, List.of(0L, 1L, 2L), 4, 2000);
            pair.server.tamper(new RdmaShuffleEngine.Tamper() {
                @Override
                public Message message(DataConnection.Role role, Message m) {
                    return m instanceof Message.FetchResponse ? null : m; // lost
                }
            });
            for (Collector got : fetchTogether(pair, 6, List.of(0L, 1L, 2L), 4)) {
                got.await();
                assertTrue(got.fetched.isEmpty(), "fetched without an answer: " + got.fetched.keySet());
                assertEquals(3, got.failed.size());
                for (Throwable e : got.failed.values()) {
                    assertTrue(e instanceof BlockFetchException f && f.kind() == BlockFetchException.Kind.FAILED
                            && e.getMessage().contains("no answer to a metadata request"), String.valueOf(e));
                }
            }
            EngineTestSupport.assertNothingLeaks(pair.client);
        }
    }

    /**
     * The layouts do not fit the reducer's receive buffer (4 KiB, outputs of 4,000 partitions), so the
     * answer to the request that asked for them comes without them. The blocks that waited for them
     * are then asked for, and every block of every fetch arrives intact. From then on the shuffle's
     * blocks are asked for at once: no request asks for its layouts, nothing waits for them.
     */
    @Test
    void blocksWaitingForALayoutLeftOutOfTheAnswerAreAskedFor() throws Exception {
        try (EnginePair pair = withReceiveBuffersOf("4k")) {
            List<Long> maps = List.of(0L, 1L, 2L);
            registerOutputs(pair, 7, maps, 4000, 700);
            AtomicInteger layoutsSent = countLayoutsSent(pair);
            awaitIntact(pair, fetchTogether(pair, 7, maps, 8), 7, maps);
            assertEquals(0, layoutsSent.get(), "a layout that did not fit was sent");

            AtomicInteger asking = new AtomicInteger();
            pair.client.tamper(new RdmaShuffleEngine.Tamper() {
                @Override
                public Message message(DataConnection.Role role, Message m) {
                    if (m instanceof Message.FetchRequest r && r.withLayouts()) {
                        asking.incrementAndGet();
                    }
                    return m;
                }
            });
            awaitIntact(pair, fetchTogether(pair, 7, maps, 4), 7, maps);
            assertEquals(0, asking.get(), "requests that asked again for layouts the peer does not send");
            assertEquals(1, pair.client.counters().fetchConnections(), "no answer broke the connection");
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    /**
     * An answer holds one layout here (8 KiB receive buffers, outputs of 1,000 partitions), so the
     * first answer brings one of the six layouts its request asked for. The reducer learns that: the
     * blocks that waited for the other five are asked for, each later request asks for one layout,
     * and no layout crosses the wire twice; every block of every fetch arrives intact.
     */
    @Test
    void layoutsThatFillAnAnswerAreEachSentOnce() throws Exception {
        try (EnginePair pair = withReceiveBuffersOf("8k")) {
            List<Long> maps = List.of(0L, 1L, 2L, 3L, 4L, 5L);
            registerOutputs(pair, 8, maps, 1000, 700);
            java.util.Map<Long, Integer> layoutsSent = countLayoutsByOutput(pair);
            awaitIntact(pair, fetchTogether(pair, 8, maps, 12), 8, maps);
            layoutsSent.forEach((map, n) -> assertEquals(1, n, "layout of output " + map + " sent " + n + " times"));
            assertTrue(!layoutsSent.isEmpty(), "no layout fit an answer: the test's sizes are off");
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    /**
     * Reduce tasks one after another, each reading its partition of every output of a peer that has
     * more outputs than the layout cache holds (70 outputs of 1,000 partitions, about 8 KiB of layout
     * each; the cache has 512 KiB). The cache keeps the layouts it took and takes no more while full,
     * and once a layout told their size no request asks for one it could not keep: each output's layout
     * crosses the wire at most once, and the later tasks read the cached outputs' blocks with no request
     * and ask for the others' without layouts. (Evicting the least recently used, as it did, threw out
     * every layout before the next task came back to it, and every request asked for layouts again.)
     * Every block intact.
     */
    @Test
    void moreOutputsThanTheCacheHolds_readInTurnByTask_sendEachLayoutOnce() throws Exception {
        try (EnginePair pair = withLayoutCacheOf("512k", "60s")) {
            List<Long> maps = mapIds(70);
            assertTrue(maps.size() * 8L * 1001 > 512 << 10, "more layouts than the cache holds");
            registerOutputs(pair, 9, maps, 1000, 16);
            java.util.Map<Long, Integer> layoutsSent = countLayoutsByOutput(pair);
            AtomicInteger requests = EngineTestSupport.countFetchRequests(pair);
            List<String> perTask = new java.util.ArrayList<>();
            int lastTaskRequests = 0;
            for (int p = 0; p < 6; p++) { // one task after another, like an executor's one core
                int before = requests.get();
                int layoutsBefore = layoutsSent.values().stream().mapToInt(Integer::intValue).sum();
                fetchInTurn(pair, 9, maps, p);
                lastTaskRequests = requests.get() - before;
                perTask.add(lastTaskRequests + " requests, "
                        + (layoutsSent.values().stream().mapToInt(Integer::intValue).sum() - layoutsBefore) + " layouts");
            }
            layoutsSent.forEach((map, n) -> assertEquals(1, n, "layout of output " + map + " sent " + n + " times; tasks: " + perTask));
            assertTrue(layoutsSent.size() <= maps.size(), perTask.toString());
            assertTrue(lastTaskRequests <= 1, "the last task's requests (only the outputs not cached need one): " + perTask);
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    /**
     * A shuffle read to the end fills the cache (70 outputs of 1,000 partitions); the next shuffle's
     * layouts push its least recently used out, instead of waiting for them to age out: the next
     * shuffle's second task reads every block from layouts, with no request.
     */
    @Test
    void theNextShufflesLayoutsPushOutTheLastOnes() throws Exception {
        try (EnginePair pair = withLayoutCacheOf("512k", "60s")) {
            List<Long> many = mapIds(70);
            registerOutputs(pair, 10, many, 1000, 16);
            List<Long> few = List.of(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L);
            registerOutputs(pair, 11, few, 1000, 16);
            for (int p = 0; p < 3; p++) { // shuffle 10's tasks, one after another: the cache fills with its layouts
                fetchInTurn(pair, 10, many, p);
            }
            assertLastTaskAsksForNothing(pair, 11, few, 1, "shuffle 11's");
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    /**
     * Tasks reading partitions 0 .. {@code filling - 1} of {@code maps} ask for blocks (and layouts);
     * the task after them, partition {@code filling}, reads every block from kept layouts: no request.
     */
    private static void assertLastTaskAsksForNothing(EnginePair pair, int shuffle, List<Long> maps, int filling, String whose)
            throws InterruptedException {
        AtomicInteger requests = EngineTestSupport.countFetchRequests(pair);
        for (int p = 0; p < filling; p++) {
            fetchInTurn(pair, shuffle, maps, p);
        }
        int asked = requests.get();
        fetchInTurn(pair, shuffle, maps, filling);
        assertTrue(asked >= 1, whose + " first tasks asked for nothing");
        assertEquals(asked, requests.get(), "requests of " + whose + " last task (its layouts were not kept)");
    }

    /** Map ids 0 .. n - 1. */
    private static List<Long> mapIds(int n) {
        return java.util.stream.LongStream.range(0, n).boxed().toList();
    }

    /** One task: partition p of every output in {@code maps}, awaited, every block intact. */
    private static void fetchInTurn(EnginePair pair, int shuffle, List<Long> maps, int p) throws InterruptedException {
        List<BlockId> blocks = new java.util.ArrayList<>();
        for (long m : maps) {
            blocks.add(BlockId.of(shuffle, m, p));
        }
        Collector got = new Collector(blocks.size());
        pair.client.fetchBlocks(pair.server.address(), blocks, got);
        got.await().assertAllIntact(EngineTestSupport.expected(pair.outputs, blocks));
    }

    /**
     * A connection closed (idle for a second) gives its layouts' memory back to the engine's budget: the
     * next connection to the same peer keeps the layouts of a shuffle that took more than half of it,
     * and once they have come its tasks ask for nothing. Were the closed connection's bytes still counted, the new cache
     * would keep none and every task would ask again.
     */
    @Test
    void aClosedConnectionsLayoutsLeaveRoomForTheNextConnections() throws Exception {
        try (EnginePair pair = withLayoutCacheOf("512k", "1s")) {
            List<Long> maps = mapIds(40); // about 320 KiB of layouts: more than half the cache, all of it kept
            registerOutputs(pair, 12, maps, 1000, 16);
            fetchInTurn(pair, 12, maps, 0);
            fetchInTurn(pair, 12, maps, 1);
            assertEquals(40 * (8L * 1001 + 128), pair.client.counters().layoutCacheBytes(), "what 40 layouts are counted as");
            long deadline = System.nanoTime() + 15_000_000_000L;
            while (pair.client.counters().fetchConnections() > 0) {
                assertTrue(System.nanoTime() < deadline, "the idle connection was not closed within 15 s");
                Thread.sleep(50);
            }
            assertEquals(0, pair.client.counters().layoutCacheBytes(), "held after its connection closed");
            // A new connection: its cache starts empty and fills again (an answer holds about 30 of
            // these layouts: two tasks, partitions 0 and 1 again, bring all 40).
            assertLastTaskAsksForNothing(pair, 12, maps, 2, "the new connection's");
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    /** Two engines (the small test config), the reducer's layout cache {@code memory} and its idle timeout {@code idle}. */
    private static EnginePair withLayoutCacheOf(String memory, String idle) {
        org.rdmashuffle.core.config.EngineConfig server = EngineTestSupport.smallConfig()
                .set(org.rdmashuffle.core.config.EngineConfig.KEY_RECEIVE_BUFFER_SIZE, "64k");
        org.rdmashuffle.core.config.EngineConfig client = EngineTestSupport.smallConfig()
                .set(org.rdmashuffle.core.config.EngineConfig.KEY_RECEIVE_BUFFER_SIZE, "64k")
                .set(org.rdmashuffle.core.config.EngineConfig.KEY_LAYOUT_CACHE_MEMORY, memory)
                .set(org.rdmashuffle.core.config.EngineConfig.KEY_IDLE_TIMEOUT, idle);
        return new EnginePair(server, EngineTestSupport.SECRET, client, EngineTestSupport.SECRET);
    }

    /** Two engines (the small test config) whose receive buffers are {@code size}: answers hold only so much. */
    private static EnginePair withReceiveBuffersOf(String size) throws Exception {
        org.rdmashuffle.core.config.EngineConfig small = EngineTestSupport.smallConfig()
                .set(org.rdmashuffle.core.config.EngineConfig.KEY_RECEIVE_BUFFER_SIZE, size);
        return new EnginePair(small, EngineTestSupport.SECRET, small, EngineTestSupport.SECRET);
    }
}
