package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.protocol.BlockId;

/**
 * A flood of blocks asked of one peer at once: 1,500 fetch calls made together, each for its
 * partition of four outputs, no layouts (the answers have no room for them), receive buffers of 1 KiB
 * (17 blocks a request): some 350 requests. The engine used to send them all at once; past its 16
 * send buffers and the 256 sends a connection may have waiting, it cut its own connection as a peer
 * that takes none, and every block on it failed. Now at most {@code UnsentBlocks.MAX_REQUESTS_IN_FLIGHT}
 * requests await answers and the rest go out, full, as answers come back: every block arrives
 * intact, over the one connection.
 */
class FetchCallFloodTest {
    private static final int CALLS = 1500;
    private static final int OUTPUTS = 4;

    @TempDir
    Path dir;

    @Test
    void thousandsOfBlocksAskedAtOnce_ofOnePeer_areServedOverOneConnection() throws Exception {
        EngineConfig small = EngineTestSupport.smallConfig().set(EngineConfig.KEY_RECEIVE_BUFFER_SIZE, "1k"); // 17 blocks a request; 16 send buffers
        try (EnginePair pair = new EnginePair(small, EngineTestSupport.SECRET, small, EngineTestSupport.SECRET)) {
            int[] sizes = new int[CALLS];
            java.util.Arrays.fill(sizes, 24);
            List<Long> maps = new ArrayList<>();
            for (long m = 0; m < OUTPUTS; m++) {
                EngineTestSupport.MapOutput o = EngineTestSupport.writeMapOutput(dir, 3, m, sizes, 7 + (int) m);
                pair.server.registerMapOutput(3, m, o.file(), o.offsets());
                pair.outputs.add(o);
                maps.add(m);
            }
            AtomicInteger requests = EngineTestSupport.countFetchRequests(pair);
            List<Collector> calls = new ArrayList<>();
            List<List<BlockId>> asked = new ArrayList<>();
            for (int p = 0; p < CALLS; p++) { // call p: partition p of every output, all calls before any answer is read
                List<BlockId> blocks = new ArrayList<>();
                for (long m : maps) {
                    blocks.add(BlockId.of(3, m, p));
                }
                Collector got = new Collector(blocks.size());
                calls.add(got);
                asked.add(blocks);
                pair.client.fetchBlocks(pair.server.address(), blocks, got);
            }
            for (int p = 0; p < CALLS; p++) {
                calls.get(p).await().assertAllIntact(EngineTestSupport.expected(pair.outputs, asked.get(p)));
            }
            assertEquals(1, pair.client.counters().fetchConnections(), "the connection was cut and another opened");
            assertTrue(requests.get() < CALLS / 2, requests.get() + " requests for " + CALLS + " calls");
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }
}
