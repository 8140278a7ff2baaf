package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.client.BlockFetchException;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.protocol.BlockDescriptor;
import org.rdmashuffle.core.transport.DataConnection;
import org.rdmashuffle.core.transport.DataConnection.Role;
import org.rdmashuffle.verbs.VerbsProvider;

/**
 * Each test provokes one failure and checks the contract: exactly the affected blocks fail, with an
 * error naming the peer and the blocks; nothing leaks; the next fetch works (over a new connection
 * where the old one had to go). The peer process dying mid-fetch is in {@link TwoProcessFetchTest}.
 */
class FaultInjectionTest {
    @TempDir
    Path dir;

    private static void assertNamesPeerAndBlock(EnginePair pair, BlockId block, Throwable e, String cause) {
        BlockFetchException f = assertInstanceOf(BlockFetchException.class, e, String.valueOf(e));
        assertTrue(f.getMessage().contains(":" + pair.server.address().getPort()), "peer not named: " + f.getMessage());
        assertTrue(f.blocks().contains(block) && f.getMessage().contains("shuffle_"), "blocks not named: " + f.getMessage());
        assertTrue(f.getMessage().contains(cause), "expected '" + cause + "' in: " + f.getMessage());
    }

    /** Fetches everything once more, with nothing tampered, and checks it all arrives. */
    private static void fetchAllIntact(EnginePair pair) throws InterruptedException {
        List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
        Collector again = new Collector(blocks.size());
        pair.client.fetchBlocks(pair.server.address(), blocks, again);
        again.await().assertAllIntact(EngineTestSupport.expected(pair.outputs, blocks));
        EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
    }

    /** A tamper that rewrites every descriptor of the first FetchResponse the server sends. */
    static RdmaShuffleEngine.Tamper rewriteFirstResponse(java.util.function.UnaryOperator<BlockDescriptor> change) {
        AtomicBoolean once = new AtomicBoolean(true);
        return new RdmaShuffleEngine.Tamper() {
            @Override
            public Message message(Role role, Message m) {
                if (m instanceof Message.FetchResponse r && once.getAndSet(false)) {
                    return new Message.FetchResponse(r.requestId(), r.blocks().stream().map(change).toList());
                }
                return m;
            }
        };
    }

    private static Collector fetchFirstPartitions(EnginePair pair) throws InterruptedException {
        List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs).subList(0, 6);
        Collector got = new Collector(blocks.size());
        pair.client.fetchBlocks(pair.server.address(), blocks, got);
        return got.await();
    }

    @Test
    void corruptedMetadataResponse_failsTheBlocks_andTheNextFetchReconnects() throws Exception {
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 1, 2, 8, EngineTestSupport.size(8000))) {
            AtomicBoolean once = new AtomicBoolean(true);
            pair.server.tamper(new RdmaShuffleEngine.Tamper() {
                @Override
                public int bytes(Role role, java.lang.foreign.MemorySegment encoded, int length) {
                    if (once.getAndSet(false)) {
                        encoded.set(ValueLayout.JAVA_BYTE, 0, (byte) 99); // a message type nobody defined
                    }
                    return length;
                }
            });
            Collector got = fetchFirstPartitions(pair);
            assertEquals(0, got.fetched.size());
            BlockId first = EngineTestSupport.everyPartition(pair.outputs).get(0);
            assertNamesPeerAndBlock(pair, first, got.failed.get(first), "unknown message type 99");
            fetchAllIntact(pair);
            EngineTestSupport.eventually("the server dropped the broken connection",
                    () -> pair.server.counters().servingConnections() == 1);
        }
    }

    @Test
    void corruptedFetchRequest_theServerSaysWhyAndCloses() throws Exception {
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 1, 2, 8, EngineTestSupport.size(8000))) {
            AtomicBoolean once = new AtomicBoolean(true);
            pair.client.tamper(new RdmaShuffleEngine.Tamper() {
                @Override
                public int bytes(Role role, java.lang.foreign.MemorySegment encoded, int length) {
                    if (once.getAndSet(false)) {
                        encoded.set(ValueLayout.JAVA_BYTE, 1, (byte) 0xFF); // a varint that never ends
                        encoded.set(ValueLayout.JAVA_BYTE, 2, (byte) 0xFF);
                    }
                    return length;
                }
            });
            Collector got = fetchFirstPartitions(pair);
            BlockId first = EngineTestSupport.everyPartition(pair.outputs).get(0);
            assertNamesPeerAndBlock(pair, first, got.failed.get(first), "the peer closed the connection: malformed message");
            fetchAllIntact(pair);
        }
    }

    @Test
    void wrongRkey_failsWithRemoteAccessError_andTheNextFetchReconnects() throws Exception {
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 1, 2, 8, EngineTestSupport.size(8000))) {
            pair.server.tamper(rewriteFirstResponse(b -> new BlockDescriptor(b.shuffleId(), b.mapId(), b.startPartition(),
                    b.endPartition(), b.address(), b.length(), b.rkey() ^ 0x5a5a00)));
            Collector got = fetchFirstPartitions(pair);
            assertTrue(got.fetched.values().stream().allMatch(b -> b.length == 0), "only empty blocks may arrive");
            BlockId failed = got.failed.keySet().iterator().next();
            assertNamesPeerAndBlock(pair, failed, got.failed.get(failed), "REM_ACCESS_ERR");
            fetchAllIntact(pair);
        }
    }

    @Test
    void readBeyondTheRegisteredRange_isRefusedByThePeersDevice() throws Exception {
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 1, 1, 4, EngineTestSupport.size(8000))) {
            pair.server.tamper(rewriteFirstResponse(b -> new BlockDescriptor(b.shuffleId(), b.mapId(), b.startPartition(),
                    b.endPartition(), b.address(), b.length() == 0 ? 0 : b.length() + (1 << 20), b.rkey())));
            List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
            Collector got = new Collector(blocks.size());
            pair.client.fetchBlocks(pair.server.address(), blocks, got);
            got.await();
            BlockId failed = got.failed.keySet().iterator().next();
            assertNamesPeerAndBlock(pair, failed, got.failed.get(failed), "REM_ACCESS_ERR");
            fetchAllIntact(pair);
        }
    }

    @Test
    void requestBeyondTheOutputsPartitions_getsAnErrorNamingTheBlockAndTheKind() throws Exception {
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 1, 1, 4, EngineTestSupport.size(8000))) {
            BlockId beyond = new BlockId(1, 0, 2, 9);
            Collector got = new Collector(1);
            pair.client.fetchBlocks(pair.server.address(), List.of(beyond), got);
            got.await();
            assertNamesPeerAndBlock(pair, beyond, got.failed.get(beyond), beyond + ": partitions outside the map output");
            fetchAllIntact(pair);
            assertEquals(1, pair.server.counters().servingConnections(), "a refused request costs no connection");
        }
    }

    @Test
    void oversizeMessage_failsTheConnectionNamingTheReceiveBuffer() throws Exception {
        EngineConfig small = EngineTestSupport.smallConfig().set(EngineConfig.KEY_RECEIVE_BUFFER_SIZE, "1k");
        try (EnginePair pair = new EnginePair(EngineTestSupport.smallConfig(), EngineTestSupport.SECRET, small,
                EngineTestSupport.SECRET).withOutputs(dir, 1, 2, 8, EngineTestSupport.size(8000))) {
            AtomicBoolean once = new AtomicBoolean(true);
            pair.server.tamper(new RdmaShuffleEngine.Tamper() {
                @Override
                public int bytes(Role role, java.lang.foreign.MemorySegment encoded, int length) {
                    return once.getAndSet(false) ? 4096 : length; // four times the reducer's receive buffer
                }
            });
            Collector got = fetchFirstPartitions(pair);
            BlockId first = EngineTestSupport.everyPartition(pair.outputs).get(0);
            // LOC_LEN_ERR on the software provider; rxe reports LOC_QP_OP_ERR.
            assertNamesPeerAndBlock(pair, first, got.failed.get(first), "a receive failed with LOC_");
            assertNamesPeerAndBlock(pair, first, got.failed.get(first), "(a message over the 1024-byte receive buffer");
            fetchAllIntact(pair);
        }
    }

    @Test
    void failedAuthentication_refusesTheFetch_andCreatesNoQueuePair() throws Exception {
        byte[] wrong = "a-different-secret-of-enough-length".getBytes(StandardCharsets.US_ASCII);
        try (EnginePair pair = new EnginePair(EngineTestSupport.smallConfig(), EngineTestSupport.SECRET,
                EngineTestSupport.smallConfig(), wrong).withOutputs(dir, 1, 1, 4, EngineTestSupport.size(8000))) {
            List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
            Collector got = new Collector(blocks.size());
            pair.client.fetchBlocks(pair.server.address(), blocks, got);
            got.await();
            assertEquals(blocks.size(), got.failed.size());
            assertNamesPeerAndBlock(pair, blocks.get(0), got.failed.get(blocks.get(0)), "cannot connect");
            // The server refuses a client that cannot prove the secret before it proves anything itself.
            assertTrue(got.failed.get(blocks.get(0)).getMessage().contains("wrong secret"),
                    got.failed.get(blocks.get(0)).getMessage());
            assertEquals(java.util.Optional.of(org.rdmashuffle.verbs.Trouble.AUTHENTICATION),
                    org.rdmashuffle.verbs.Trouble.in(got.failed.get(blocks.get(0))), "the line docs/troubleshooting.md explains");
            assertEquals(0, pair.server.counters().servingConnections(), "no queue pair for an unauthenticated peer");
            assertEquals(0, pair.client.counters().fetchConnections());
        }
    }

    @Test
    void unauthenticatedPeer_isRefusedByAnAuthenticatingServer() throws Exception {
        try (EnginePair pair = new EnginePair(EngineTestSupport.smallConfig(), EngineTestSupport.SECRET,
                EngineTestSupport.smallConfig(), null).withOutputs(dir, 1, 1, 4, EngineTestSupport.size(8000))) {
            BlockId b = BlockId.of(1, 0, 0);
            Collector got = new Collector(1);
            pair.client.fetchBlocks(pair.server.address(), List.of(b), got);
            got.await();
            assertNamesPeerAndBlock(pair, b, got.failed.get(b), "cannot connect");
            assertEquals(0, pair.server.counters().servingConnections());
        }
    }

    @Test
    void receivePoolExhausted_sendersWaitAndEveryBlockArrives() throws Exception {
        EngineConfig tiny = EngineTestSupport.smallConfig().set(EngineConfig.KEY_RECEIVE_BUFFERS, "2")
                .set(EngineConfig.KEY_RECEIVE_LOW_WATER, "0").set(EngineConfig.KEY_QPS_PER_PEER, "4");
        EngineConfig client = EngineTestSupport.smallConfig().set(EngineConfig.KEY_QPS_PER_PEER, "4");
        // 64 outputs of one partition: a reducer learns no layout from them (nothing else to read there), so
        // every fetch is a request, however the answers interleave with the fetches.
        try (EnginePair pair = new EnginePair(tiny, EngineTestSupport.SECRET, client, EngineTestSupport.SECRET)
                .withOutputs(dir, 1, 64, 1, EngineTestSupport.size(2000))) {
            AtomicBoolean once = new AtomicBoolean(true);
            pair.server.tamper(new RdmaShuffleEngine.Tamper() {
                @Override
                public Message message(Role role, Message m) {
                    if (once.getAndSet(false)) {
                        // Hold the poller (no repost) until the reducer has more requests out than the pool has
                        // buffers, then a little longer for them to land: a fixed pause was too short for the
                        // emulated guest's cold first fetches.
                        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
                        while (pair.client.counters().awaitingRequests() < 3 && System.nanoTime() < deadline) {
                            sleep(10);
                        }
                        sleep(200);
                    }
                    return m;
                }
            });
            List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
            Collector got = new Collector(blocks.size());
            List<Thread> threads = new ArrayList<>();
            for (BlockId b : blocks) { // one request per block: 64 requests for 2 receive buffers
                threads.add(Thread.ofVirtual().start(() -> pair.client.fetchBlocks(pair.server.address(), List.of(b), got)));
            }
            for (Thread t : threads) {
                t.join();
            }
            got.await().assertAllIntact(EngineTestSupport.expected(pair.outputs, blocks));
            assertTrue(pair.server.counters().receiveLowWaterEvents() > 0, "the pool never ran dry: " + pair.server.counters());
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
            assertEquals(2, pair.server.counters().receivesPosted(), "every buffer is back on the queue");
        }
    }

    @Test
    void unansweredRequest_timesOutNamingThePeer_andTheNextFetchReconnects() throws Exception {
        EngineConfig impatient = EngineTestSupport.smallConfig().set(EngineConfig.KEY_FETCH_TIMEOUT, "1s");
        try (EnginePair pair = new EnginePair(EngineTestSupport.smallConfig(), EngineTestSupport.SECRET, impatient,
                EngineTestSupport.SECRET).withOutputs(dir, 1, 1, 4, EngineTestSupport.size(8000))) {
            AtomicBoolean once = new AtomicBoolean(true);
            pair.server.tamper(new RdmaShuffleEngine.Tamper() {
                @Override
                public Message message(Role role, Message m) {
                    return once.getAndSet(false) ? null : m; // the first answer is lost
                }
            });
            BlockId b = BlockId.of(1, 0, 1);
            Collector got = new Collector(1);
            pair.client.fetchBlocks(pair.server.address(), List.of(b), got);
            got.await();
            assertNamesPeerAndBlock(pair, b, got.failed.get(b), "TimeoutException: no answer to a metadata request within 1000 ms");
            fetchAllIntact(pair);
        }
    }

    /**
     * The reducer's owner of a connection throws on an answer (a bug, or input no check caught: once an
     * IndexOutOfBoundsException): that peer's blocks fail at once, naming what was thrown, not at the
     * 60 s fetch timeout; the one poller goes on serving the connection to another peer, and the next
     * fetch from the first reconnects.
     */
    @Test
    void aFetcherThrowingOnAnAnswer_failsItsBlocksAtOnce_andThePollerServesTheOtherPeer() throws Exception {
        EngineConfig patient = EngineTestSupport.smallConfig().set(EngineConfig.KEY_FETCH_TIMEOUT, "60s")
                .set(EngineConfig.KEY_POLLER_THREADS, "1");
        VerbsProvider otherProvider = EngineTestSupport.provider();
        try (EnginePair pair = new EnginePair(EngineTestSupport.smallConfig(), EngineTestSupport.SECRET, patient,
                EngineTestSupport.SECRET).withOutputs(dir, 1, 2, 8, EngineTestSupport.size(8000))) {
            RdmaShuffleEngine other = RdmaShuffleEngine.start(EngineTestSupport.smallConfig(), EngineTestSupport.APP,
                    EngineTestSupport.SECRET, otherProvider);
            try {
                List<EngineTestSupport.MapOutput> otherOutputs = registerOutputs(other, 2);
                EngineTestSupport.fetchAllIntact(pair.client, other.address(), otherOutputs); // its connection is up
                String victim = ":" + pair.server.address().getPort();
                AtomicBoolean armed = new AtomicBoolean(true);
                pair.client.tamper(new RdmaShuffleEngine.Tamper() {
                    @Override
                    public void received(DataConnection c, Message m) {
                        if (m instanceof Message.FetchResponse && c.peer().endsWith(victim) && armed.getAndSet(false)) {
                            throw new IndexOutOfBoundsException("Index 3 out of bounds for length 3");
                        }
                    }
                });
                List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
                Collector got = new Collector(blocks.size());
                long start = System.nanoTime();
                pair.client.fetchBlocks(pair.server.address(), blocks, got);
                assertTrue(got.answeredWithin(java.time.Duration.ofSeconds(15)), "blocks waited for the fetch timeout");
                long tookMillis = (System.nanoTime() - start) / 1_000_000;
                assertTrue(tookMillis < 15_000, "took " + tookMillis + " ms");
                assertTrue(!armed.get() && !got.failed.isEmpty(), "nothing failed: the hook threw " + !armed.get());
                for (java.util.Map.Entry<BlockId, Throwable> e : got.failed.entrySet()) {
                    assertNamesPeerAndBlock(pair, e.getKey(), e.getValue(), "threw java.lang.IndexOutOfBoundsException: Index 3");
                }
                // The other peer's connection, on the same poller, untouched and still served.
                EngineTestSupport.fetchAllIntact(pair.client, other.address(), otherOutputs);
                fetchAllIntact(pair);
                assertEquals(2, pair.client.counters().fetchConnections(), "the other peer's, and the first's anew");
            } finally {
                other.close();
                EngineTestSupport.closeProvider(otherProvider);
            }
        }
    }

    /**
     * The serving side's owner throws on a request: that reducer is told the server failed and its
     * connection closes, so its blocks fail at once, not at the 60 s fetch timeout; the server's one
     * poller goes on answering another reducer's requests on its connection.
     */
    @Test
    void aServerThrowingOnARequest_closesThatConnectionSayingSo_andAnswersTheOtherReducer() throws Exception {
        EngineConfig patient = EngineTestSupport.smallConfig().set(EngineConfig.KEY_FETCH_TIMEOUT, "60s");
        VerbsProvider otherProvider = EngineTestSupport.provider();
        try (EnginePair pair = new EnginePair(EngineTestSupport.smallConfig().set(EngineConfig.KEY_POLLER_THREADS, "1"),
                EngineTestSupport.SECRET, patient, EngineTestSupport.SECRET).withOutputs(dir, 1, 2, 8, EngineTestSupport.size(8000))) {
            RdmaShuffleEngine other = RdmaShuffleEngine.start(patient, EngineTestSupport.APP, EngineTestSupport.SECRET,
                    otherProvider);
            try {
                EngineTestSupport.fetchAllIntact(other, pair.server.address(), pair.outputs); // its connection is up
                AtomicBoolean armed = new AtomicBoolean(true);
                pair.server.tamper(new RdmaShuffleEngine.Tamper() {
                    @Override
                    public void received(DataConnection c, Message m) {
                        if (m instanceof Message.FetchRequest && armed.getAndSet(false)) {
                            throw new IllegalStateException("a bug answering a request");
                        }
                    }
                });
                List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
                Collector got = new Collector(blocks.size());
                long start = System.nanoTime();
                pair.client.fetchBlocks(pair.server.address(), blocks, got);
                assertTrue(got.answeredWithin(java.time.Duration.ofSeconds(15)), "blocks waited for the fetch timeout");
                long tookMillis = (System.nanoTime() - start) / 1_000_000;
                assertTrue(tookMillis < 15_000, "took " + tookMillis + " ms");
                assertTrue(!armed.get() && !got.failed.isEmpty(), "nothing failed: the hook threw " + !armed.get());
                BlockId failed = got.failed.keySet().iterator().next();
                assertNamesPeerAndBlock(pair, failed, got.failed.get(failed),
                        "the peer closed the connection: the server failed handling a message on this connection");
                assertTrue(!got.failed.get(failed).getMessage().contains("a bug answering"), "our failure is not the peer's to read");
                EngineTestSupport.eventually("the server retired the connection it threw on",
                        () -> pair.server.counters().servingConnections() == 1);
                // The other reducer's connection, on the server's one poller: a shuffle it has no layouts of is asked for.
                List<EngineTestSupport.MapOutput> more = new ArrayList<>();
                for (int m = 0; m < 2; m++) {
                    EngineTestSupport.MapOutput o = EngineTestSupport.writeMapOutput(dir, 3, m, 8, EngineTestSupport.size(8000), 77 + m);
                    pair.server.registerMapOutput(3, m, o.file(), o.offsets());
                    more.add(o);
                }
                EngineTestSupport.fetchAllIntact(other, pair.server.address(), more);
                assertEquals(1, other.counters().fetchConnections(), "the other reducer's connection stayed");
                fetchAllIntact(pair);
            } finally {
                other.close();
                EngineTestSupport.closeProvider(otherProvider);
            }
        }
    }

    /** Writes and registers {@code maps} outputs of shuffle 2 (8 partitions each) on {@code server}. */
    private List<EngineTestSupport.MapOutput> registerOutputs(RdmaShuffleEngine server, int maps) throws java.io.IOException {
        List<EngineTestSupport.MapOutput> outputs = new ArrayList<>();
        for (int m = 0; m < maps; m++) {
            EngineTestSupport.MapOutput o = EngineTestSupport.writeMapOutput(dir, 2, m, 8, EngineTestSupport.size(8000), 91 + m);
            server.registerMapOutput(2, m, o.file(), o.offsets());
            outputs.add(o);
        }
        return outputs;
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
