package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.client.BlockFetchException;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.transport.DataConnection;

/**
 * A fetching connection with nothing to do for {@code idleTimeout} is closed, and the peer is asked to
 * drop its queue pairs for us too (a DISCONNECT; the control connection stays); the next fetch opens a
 * new one. A connection
 * with a fetch under way is never closed for idleness, however long the fetch waits.
 */
class IdleConnectionTest {
    @TempDir
    Path dir;

    private static EnginePair pair(String idle, String fetchTimeout) {
        EngineConfig client = EngineTestSupport.smallConfig().set(EngineConfig.KEY_IDLE_TIMEOUT, idle)
                .set(EngineConfig.KEY_FETCH_TIMEOUT, fetchTimeout);
        return new EnginePair(EngineTestSupport.smallConfig(), EngineTestSupport.SECRET, client, EngineTestSupport.SECRET);
    }

    @Test
    void anIdleConnectionIsClosedOnBothSidesAndTheNextFetchOpensAnother() throws Exception {
        try (EnginePair pair = pair("1s", "20s")) {
            EngineTestSupport.MapOutput o = EngineTestSupport.writeMapOutput(dir, 1, 0, new int[] {3000, 4000}, 9);
            pair.server.registerMapOutput(1, 0, o.file(), o.offsets());
            BlockId b = BlockId.of(1, 0, 1);
            Collector first = new Collector(1);
            pair.client.fetchBlocks(pair.server.address(), List.of(b), first);
            assertArrayEquals(o.bytes(b), first.await().fetched.get(b));

            EngineTestSupport.eventually("an idle connection still open after 15 s: " + pair.client.counters() + " / "
                    + pair.server.counters(), () -> pair.client.counters().fetchConnections() == 0
                    && pair.server.counters().servingConnections() == 0);
            // Ended by a DISCONNECT: the control connection stays for the next set-up.
            assertEquals(1, pair.client.counters().controlConnections(), String.valueOf(pair.client.counters()));
            Collector second = new Collector(1);
            pair.client.fetchBlocks(pair.server.address(), List.of(b), second);
            assertArrayEquals(o.bytes(b), second.await().fetched.get(b), "fetched again on a new connection");
            assertEquals(1, pair.client.counters().fetchConnections());
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    /** The server's answer is lost: the request waits past the idle time and fails by the fetch timeout. */
    @Test
    void aConnectionWithARequestUnderWayIsNotClosedForIdleness() throws Exception {
        try (EnginePair pair = pair("1s", "6s")) {
            EngineTestSupport.MapOutput o = EngineTestSupport.writeMapOutput(dir, 2, 0, new int[] {3000}, 10);
            pair.server.registerMapOutput(2, 0, o.file(), o.offsets());
            pair.server.tamper(new RdmaShuffleEngine.Tamper() {
                @Override
                public Message message(DataConnection.Role role, Message m) {
                    return m instanceof Message.FetchResponse ? null : m;
                }
            });
            BlockId b = BlockId.of(2, 0, 0);
            Collector got = new Collector(1);
            pair.client.fetchBlocks(pair.server.address(), List.of(b), got);
            EngineTestSupport.eventually("the request was never sent", () -> pair.client.counters().awaitingRequests() == 1);
            Thread.sleep(2500); // well past the idle time, short of the fetch timeout
            assertEquals(1, pair.client.counters().fetchConnections(), "closed for idleness with a request awaiting");
            assertEquals(1, pair.client.counters().awaitingRequests());
            Throwable e = got.await().failed.get(b);
            assertTrue(e instanceof BlockFetchException f && f.kind() == BlockFetchException.Kind.FAILED
                    && e.getMessage().contains("no answer to a metadata request"), String.valueOf(e));
        }
    }
}
