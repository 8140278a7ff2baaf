package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.protocol.BlockId;

/**
 * Nothing at rest (issue 52): engines with nothing to fetch or serve run no periodic tick, even with
 * a connection open between them; the tick comes back for the work that needs it (a connection idle
 * past its {@code idleTimeout} is still closed).
 */
class IdleEngineTicksTest {
    @TempDir
    Path dir;

    private static EnginePair pair(String idle) {
        EngineConfig client = EngineTestSupport.smallConfig().set(EngineConfig.KEY_IDLE_TIMEOUT, idle);
        return new EnginePair(EngineTestSupport.smallConfig(), EngineTestSupport.SECRET, client, EngineTestSupport.SECRET);
    }

    private void fetchOnce(EnginePair pair, int shuffle) throws Exception {
        EngineTestSupport.MapOutput o = EngineTestSupport.writeMapOutput(dir, shuffle, 0, new int[] {3000, 4000}, 9);
        pair.server.registerMapOutput(shuffle, 0, o.file(), o.offsets());
        BlockId b = BlockId.of(shuffle, 0, 1);
        Collector got = new Collector(1);
        pair.client.fetchBlocks(pair.server.address(), List.of(b), got);
        assertArrayEquals(o.bytes(b), got.await().fetched.get(b));
    }

    /** Ticks either engine ran over {@code millis} of rest, after a second for the last ones to see the work done. */
    private static long ticksAtRest(EnginePair pair, long millis) throws InterruptedException {
        Thread.sleep(1000);
        long client = pair.client.ticksRun();
        long server = pair.server.ticksRun();
        Thread.sleep(millis);
        return pair.client.ticksRun() - client + pair.server.ticksRun() - server;
    }

    @Test
    void connectedEnginesWithNothingToDoRunNoTick() throws Exception {
        try (EnginePair pair = pair("120s")) {
            fetchOnce(pair, 1);
            EngineTestSupport.eventually("the new connection was never looked at by the timer",
                    () -> pair.client.ticksRun() > 0);
            long ticks = ticksAtRest(pair, 2000);
            assertEquals(0, ticks, "ticks over 2 s with nothing to fetch or serve (a tick every 200 ms per engine: ~20)");
            assertEquals(1, pair.client.counters().fetchConnections(), "the connection stays open (idleTimeout 120 s)");
            assertEquals(1, pair.server.counters().servingConnections());
            fetchOnce(pair, 2); // the tick arms again for new work, on the same connection
            assertEquals(1, pair.client.counters().fetchConnections());
            assertEquals(0, ticksAtRest(pair, 1000));
        }
    }

    @Test
    void anIdleConnectionIsStillClosedAtItsTimeoutThenTheEnginesRest() throws Exception {
        try (EnginePair pair = pair("1s")) {
            fetchOnce(pair, 3);
            EngineTestSupport.eventually("an idle connection still open after 15 s: " + pair.client.counters() + " / "
                    + pair.server.counters(), () -> pair.client.counters().fetchConnections() == 0
                    && pair.server.counters().servingConnections() == 0);
            assertEquals(0, ticksAtRest(pair, 1500), "ticks with the connection closed and nothing to do");
        }
    }
}
