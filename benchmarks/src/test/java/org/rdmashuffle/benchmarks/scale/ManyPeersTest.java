package org.rdmashuffle.benchmarks.scale;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.core.RdmaShuffleEngine;

/**
 * Issue 18's scale check, in CI: one serving engine (software provider) and 200 fetching peers in two
 * child JVMs, all asking at once. Every peer gets its blocks (a server whose control plane is busy is
 * asked again, not given up on), the serving JVM holds no more platform threads at 200 peers than at
 * 10, and once the peers leave no connection stays. Figures at more peers: {@link PeerScaleBenchmark}.
 */
class ManyPeersTest {
    /** Threads a serving JVM may start between 10 and 200 peers for reasons other than peers (pools growing to size). */
    private static final int SLACK_THREADS = 8;

    @Test
    void twoHundredPeersAskingAtOnce_allGetTheirBlocks_andTheServerGainsNoThreadPerPeer() throws Exception {
        Path dir = Files.createTempDirectory("rdma-shuffle-many-peers");
        try (RdmaShuffleEngine server = PeerScaleBenchmark.startServer(dir, 200)) {
            PeerScaleBenchmark.Snapshot idle = PeerScaleBenchmark.Snapshot.take(server);
            PeerScaleBenchmark.Result ten = PeerScaleBenchmark.round(server, 10, 1, java.util.Map.of());
            PeerScaleBenchmark.Result many = PeerScaleBenchmark.round(server, 200, 2, java.util.Map.of());
            assertEquals(10, ten.connected().engine().servingConnections());
            assertEquals(200, many.connected().engine().servingConnections(), "one connection per peer");
            assertEquals(200, many.connected().links() - idle.links(), "one TCP connection per peer's device");
            assertEquals(200, many.setUpMillis().length, "every peer fetched and checked every partition");
            assertTrue(many.connected().platformThreads() <= ten.connected().platformThreads() + SLACK_THREADS,
                    "platform threads at 200 peers: " + many.connected().platformThreads() + ", at 10: "
                            + ten.connected().platformThreads());
            assertEquals(0, many.afterwards().engine().servingConnections(), "connections left after the peers went");
            assertTrue(many.afterwards().platformThreads() <= ten.connected().platformThreads() + SLACK_THREADS,
                    "threads left after the peers went: " + many.afterwards().platformThreads());
            assertTrue(many.afterwards().engine().nothingOutstanding(), many.afterwards().engine().toString());
        } finally {
            PeerScaleBenchmark.deleteOutput(dir);
        }
    }
}
