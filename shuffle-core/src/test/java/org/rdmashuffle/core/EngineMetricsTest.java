package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.metrics.EngineMetrics;
import org.rdmashuffle.core.metrics.Refusal;
import org.rdmashuffle.core.protocol.BlockDescriptor;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.verbs.WorkCompletionStatus;

/**
 * What the engine tells operators' metrics systems ({@link RdmaShuffleEngine#metrics}) equals what
 * happened: blocks and bytes fetched, their latencies, connection set-ups, what the server described
 * and refused by kind, registrations, failed completions by status.
 */
class EngineMetricsTest {
    @TempDir
    Path dir;

    @Test
    void aFetch_isCountedOnBothSides_asTheBlocksAndBytesThatMoved() throws Exception {
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 1, 3, 6, EngineTestSupport.size(4000))) {
            List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
            long bytes = 0;
            for (BlockId b : blocks) {
                bytes += EngineTestSupport.expected(pair.outputs, List.of(b)).get(b).length;
            }
            Collector got = new Collector(blocks.size());
            pair.client.fetchBlocks(pair.server.address(), blocks, got);
            got.await().assertAllIntact(EngineTestSupport.expected(pair.outputs, blocks));

            EngineMetrics client = pair.client.metrics();
            assertEquals(pair.client.providerName(), client.provider());
            assertEquals(pair.client.deviceName(), client.device());
            assertEquals(1, client.fetches().fetchCalls());
            assertEquals(pair.server.metrics().served().requests(), client.fetches().requests(),
                    "round trips: the requests sent are the ones the server answered");
            assertTrue(client.fetches().requests() >= 1);
            assertEquals(blocks.size(), client.fetches().blocks(), "blocks delivered");
            assertEquals(bytes, client.fetches().bytes(), "bytes delivered");
            assertEquals(0, client.fetches().failedBlocks());
            assertEquals(blocks.size(), client.fetches().blockLatency().count(), "one latency per block");
            assertTrue(client.fetches().blockLatency().quantileMicros(0.99) <= client.fetches().blockLatency().maxMicros());
            assertEquals(1, client.fetches().connectionSetUp().count(), "one connection set up");
            assertEquals(0, client.fetches().connectionFailures());
            assertTrue(client.bufferRegistrations().count() >= 1 && client.bufferRegistrations().bytes() > 0,
                    "fetch buffers registered: " + client.bufferRegistrations());

            EngineMetrics server = pair.server.metrics();
            assertEquals(blocks.size(), server.served().blocks(), "blocks described to the reducer");
            assertEquals(bytes, server.served().bytes(), "bytes made readable");
            assertTrue(server.served().requests() >= 1);
            assertEquals(0, server.served().refused());
            assertEquals(3, server.mapOutputRegistrations().count(), "each output registered once, when first asked for");
            long fileBytes = pair.outputs.stream().mapToLong(o -> o.data().length).sum();
            assertEquals(fileBytes, server.mapOutputRegistrations().bytes());
            assertEquals(0, server.mapOutputRegistrations().failures());
            server.completionErrors().forEach((status, n) -> assertEquals(0L, n, status.name()));
            client.completionErrors().forEach((status, n) -> assertEquals(0L, n, status.name()));
        }
    }

    @Test
    void aRefusedBlock_isCountedByItsKindOnTheServer_andAsAFailedBlockOnTheClient() throws Exception {
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 1, 1, 4, EngineTestSupport.size(4000))) {
            BlockId beyond = new BlockId(1, 0, 2, 9);
            BlockId unknown = BlockId.of(1, 77, 0);
            Collector got = new Collector(1);
            pair.client.fetchBlocks(pair.server.address(), List.of(beyond), got);
            got.await();
            got = new Collector(1);
            pair.client.fetchBlocks(pair.server.address(), List.of(unknown), got);
            got.await();

            EngineMetrics server = pair.server.metrics();
            assertEquals(1L, server.served().refusals().get(Refusal.PARTITION_RANGE));
            assertEquals(1L, server.served().refusals().get(Refusal.NO_SUCH_OUTPUT));
            assertEquals(2, server.served().refused());
            assertEquals(2, pair.client.metrics().fetches().failedBlocks());
            assertEquals(0, pair.client.metrics().fetches().blocks());
        }
    }

    @Test
    void aReadThatOverrunsItsRegion_isCountedAsARemoteAccessError() throws Exception {
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 1, 1, 4, EngineTestSupport.size(4000))) {
            pair.server.tamper(FaultInjectionTest.rewriteFirstResponse(b -> new BlockDescriptor(b.shuffleId(), b.mapId(),
                    b.startPartition(), b.endPartition(), b.address(), b.length() + (1 << 20), b.rkey())));
            BlockId first = BlockId.of(1, 0, 0);
            Collector got = new Collector(1);
            pair.client.fetchBlocks(pair.server.address(), List.of(first), got);
            got.await();
            assertTrue(got.failed.containsKey(first), "the overrun read failed");
            assertEquals(java.util.Optional.of(org.rdmashuffle.verbs.Trouble.REMOTE_ACCESS),
                    org.rdmashuffle.verbs.Trouble.in(got.failed.get(first)), "the line docs/troubleshooting.md explains: "
                            + got.failed.get(first).getMessage());
            EngineTestSupport.eventually("the failed read counted",
                    () -> pair.client.metrics().completionErrors().get(WorkCompletionStatus.REM_ACCESS_ERR) >= 1);
        }
    }

    @Test
    void aPeerNobodyListensAt_isAFailedConnectionSetUp() throws Exception {
        try (EnginePair pair = EnginePair.open()) {
            int nobody;
            try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
                nobody = s.getLocalPort();
            }
            Collector got = new Collector(1);
            pair.client.fetchBlocks(new InetSocketAddress("127.0.0.1", nobody), List.of(BlockId.of(1, 0, 0)), got);
            got.await();
            assertEquals(1, pair.client.metrics().fetches().connectionFailures());
            assertEquals(0, pair.client.metrics().fetches().connectionSetUp().count());
            assertEquals(1, pair.client.metrics().fetches().failedBlocks());
        }
    }
}
