package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.client.BlockFetchException;
import org.rdmashuffle.core.client.BlockFetchListener;
import org.rdmashuffle.core.client.FetchedBlock;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.server.MapOutputRegistry;
import org.rdmashuffle.core.server.files.OutputFile;
import org.rdmashuffle.verbs.VerbsProvider;

/**
 * A node's shuffle service (one engine, many applications): each reducer reads only the outputs of
 * the application it authenticated for, outputs found by a resolver are served with their raw sizes,
 * and an application's end forgets its outputs.
 */
class ShuffleServiceEngineTest {
    private static final byte[] SECRET_A = ServiceNode.SECRET_A;
    private static final byte[] SECRET_B = ServiceNode.SECRET_B;

    @TempDir
    Path dir;

    /** The service, with the secrets it knows, and application a's reducer; closes all. */
    private static final class Node extends ServiceNode {
        final RdmaShuffleEngine reducerA = reducer("app-a", SECRET_A);
    }

    @Test
    void aReducerReadsItsApplicationsOutputs_andNotAnotherApplications() throws Exception {
        try (Node node = new Node()) {
            EngineTestSupport.MapOutput a = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("a")), 0, 7, 4,
                    5000, 1);
            EngineTestSupport.MapOutput b = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("b")), 0, 8, 4,
                    5000, 2);
            node.service.registerMapOutput("app-a", 0, 7, a.file(), a.offsets());
            node.service.registerMapOutput("app-b", 0, 8, b.file(), b.offsets());

            List<BlockId> mine = EngineTestSupport.everyPartition(List.of(a));
            Collector ok = new Collector(mine.size());
            node.reducerA.fetchBlocks(node.service.address(), mine, ok);
            ok.await().assertAllIntact(EngineTestSupport.expected(List.of(a), mine));

            BlockId theirs = BlockId.of(0, 8, 1);
            Collector refused = new Collector(1);
            node.reducerA.fetchBlocks(node.service.address(), List.of(theirs), refused);
            refused.await();
            Throwable e = refused.failed.get(theirs);
            assertTrue(e != null && e.getMessage().contains(theirs + ": no such map output of this application here"),
                    "app-a asked for app-b's map output: " + e);
            EngineTestSupport.assertNothingLeaks(node.reducerA, node.service);
        }
    }

    @Test
    void aReducerOfAnUnknownApplication_isRefusedAtAuthentication() throws Exception {
        try (Node node = new Node()) {
            EngineTestSupport.MapOutput a = EngineTestSupport.writeMapOutput(dir, 0, 1, 2, 1000, 3);
            node.service.registerMapOutput("app-a", 0, 1, a.file(), a.offsets());
            VerbsProvider p = EngineTestSupport.provider();
            try (RdmaShuffleEngine stranger = RdmaShuffleEngine.start(EngineTestSupport.smallConfig(), "app-a",
                    "a-guessed-secret-0123456789abcdef".getBytes(StandardCharsets.US_ASCII), p)) {
                BlockId block = BlockId.of(0, 1, 0);
                Collector c = new Collector(1);
                stranger.fetchBlocks(node.service.address(), List.of(block), c);
                c.await();
                assertTrue(c.fetched.isEmpty(), "a wrong secret read a block");
                assertTrue(c.failed.get(block).getMessage().contains("cannot connect"), c.failed.get(block).getMessage());
                assertEquals(BlockFetchException.Kind.NOT_AUTHENTICATED, BlockFetchException.kindOf(c.failed.get(block)));
                assertTrue(c.failed.get(block).getMessage().contains("RS07 authentication: saw "), c.failed.get(block).getMessage());
            } finally {
                EngineTestSupport.closeProvider(p);
            }
            assertEquals(0, node.service.counters().servingConnections());
        }
    }

    @Test
    void resolvedOutputsCarryTheirRawSizes_andEndWithTheirApplication() throws Exception {
        try (Node node = new Node()) {
            byte[] data = new byte[4000];
            new java.util.Random(4).nextBytes(data);
            EngineTestSupport.MapOutput a = new EngineTestSupport.MapOutput(0, 3, Files.write(dir.resolve("file.out"), data),
                    new long[] {0, 1000, 2500, 4000}, data);
            AtomicLong resolved = new AtomicLong();
            node.service.resolver((app, shuffle, map) -> {
                if (!app.equals("app-a") || map != 3) {
                    return null;
                }
                resolved.incrementAndGet();
                return new MapOutputRegistry.ResolvedOutput(OutputFile.trusted(a.file()), a.offsets(), new long[] {100, 200, 300});
            });
            BlockId first = new BlockId(0, 3, 0, 2);
            Map<BlockId, Long> raw = new ConcurrentHashMap<>();
            Collector bytes = new Collector(1);
            node.reducerA.fetchBlocks(node.service.address(), List.of(first), new BlockFetchListener() {
                @Override
                public void onBlockFetched(FetchedBlock block) {
                    raw.put(block.id(), block.rawLength());
                    bytes.onBlockFetched(block);
                }

                @Override
                public void onBlockFetchFailure(BlockId block, Throwable cause) {
                    bytes.onBlockFetchFailure(block, cause);
                }
            });
            bytes.await().assertAllIntact(EngineTestSupport.expected(List.of(a), List.of(first)));
            assertEquals(300L, raw.get(first), "raw sizes of partitions 0 and 1");

            Collector again = new Collector(1);
            node.reducerA.fetchBlocks(node.service.address(), List.of(BlockId.of(0, 3, 2)), again);
            again.await().assertAllIntact(EngineTestSupport.expected(List.of(a), List.of(BlockId.of(0, 3, 2))));
            assertEquals(1, resolved.get(), "found once, then served from the registry");

            assertEquals(1, node.service.unregisterApplication("app-a"));
            assertEquals(0, node.service.counters().registeredMapOutputBytes());
            assertThrows(IllegalStateException.class, () -> node.reducerA.unregisterApplication("app-a"),
                    "an executor's engine serves only its own outputs");
        }
    }

    @Test
    void aLostOutputAmongServedOnes_failsAlone_asNoSuchOutput_andTheOthersArrive() throws Exception {
        try (Node node = new Node()) {
            EngineTestSupport.MapOutput a = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("a")), 0, 1, 3,
                    3000, 6);
            EngineTestSupport.MapOutput b = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("b")), 0, 3, 3,
                    3000, 7);
            node.service.registerMapOutput("app-a", 0, 1, a.file(), a.offsets());
            node.service.registerMapOutput("app-a", 0, 3, b.file(), b.offsets());
            BlockId lost = BlockId.of(0, 2, 1);
            List<BlockId> served = EngineTestSupport.everyPartition(List.of(a, b));
            List<BlockId> asked = new java.util.ArrayList<>(served);
            asked.add(2, lost); // in the middle of one request: the service stops at it
            Collector c = new Collector(asked.size());
            node.reducerA.fetchBlocks(node.service.address(), asked, c);
            c.await();

            assertEquals(java.util.Set.of(lost), c.failed.keySet(), "only the lost block fails");
            assertEquals(BlockFetchException.Kind.NO_SUCH_OUTPUT, BlockFetchException.kindOf(c.failed.get(lost)));
            assertTrue(c.failed.get(lost).getMessage().contains(lost + ": no such map output"), c.failed.get(lost).getMessage());
            Map<BlockId, byte[]> expected = EngineTestSupport.expected(List.of(a, b), served);
            assertEquals(expected.keySet(), c.fetched.keySet(), "the served blocks arrived beside the failure");
            for (BlockId id : served) {
                org.junit.jupiter.api.Assertions.assertArrayEquals(expected.get(id), c.fetched.get(id), id.toString());
            }
            EngineTestSupport.assertNothingLeaks(node.reducerA, node.service);
        }
    }

    @Test
    void nothingListeningAtTheAddress_isUnreachable() throws Exception {
        try (Node node = new Node()) {
            java.net.InetSocketAddress nobody;
            try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
                nobody = new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), s.getLocalPort());
            }
            BlockId block = BlockId.of(0, 1, 0);
            Collector c = new Collector(1);
            node.reducerA.fetchBlocks(nobody, List.of(block), c);
            c.await();
            assertEquals(BlockFetchException.Kind.UNREACHABLE, BlockFetchException.kindOf(c.failed.get(block)),
                    String.valueOf(c.failed.get(block)));
        }
    }

    @Test
    void aSlowDiskSearch_doesNotStallRequestsForRegisteredOutputs() throws Exception {
        try (Node node = new Node()) {
            EngineTestSupport.MapOutput known = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("k")), 0, 7,
                    2, 3000, 8);
            EngineTestSupport.MapOutput onDisk = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("d")), 0, 9,
                    2, 3000, 9);
            node.service.registerMapOutput("app-a", 0, 7, known.file(), known.offsets());
            java.util.concurrent.CountDownLatch searching = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch diskAnswers = new java.util.concurrent.CountDownLatch(1);
            node.service.resolver((app, shuffle, map) -> {
                if (map != 9) {
                    return null;
                }
                searching.countDown();
                try {
                    diskAnswers.await();
                } catch (InterruptedException e) {
                    throw new java.io.IOException(e);
                }
                return new MapOutputRegistry.ResolvedOutput(OutputFile.trusted(onDisk.file()), onDisk.offsets(), null);
            });
            try {
                List<BlockId> slowBlocks = EngineTestSupport.everyPartition(List.of(onDisk));
                Collector slow = new Collector(slowBlocks.size());
                node.reducerA.fetchBlocks(node.service.address(), slowBlocks, slow);
                assertTrue(searching.await(30, java.util.concurrent.TimeUnit.SECONDS), "the service never looked for map 9");

                // The same reducer, the same connection: a request for a registered output is answered
                // while the disk search for map 9 is still under way.
                List<BlockId> knownBlocks = EngineTestSupport.everyPartition(List.of(known));
                Collector fast = new Collector(knownBlocks.size());
                node.reducerA.fetchBlocks(node.service.address(), knownBlocks, fast);
                assertTrue(fast.answeredWithin(java.time.Duration.ofSeconds(20)),
                        "a request for a registered output waited for another output's disk search");
                fast.assertAllIntact(EngineTestSupport.expected(List.of(known), knownBlocks));
                assertTrue(slow.fetched.isEmpty() && slow.failed.isEmpty(), "map 9 was answered before it was found");

                diskAnswers.countDown();
                slow.await().assertAllIntact(EngineTestSupport.expected(List.of(onDisk), slowBlocks));
            } finally {
                diskAnswers.countDown();
            }
            EngineTestSupport.assertNothingLeaks(node.reducerA, node.service);
        }
    }
}
