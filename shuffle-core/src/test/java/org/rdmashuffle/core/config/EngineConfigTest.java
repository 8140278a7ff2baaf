package org.rdmashuffle.core.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;

import org.junit.jupiter.api.Test;

/** Settings read from a property source: defaults, and a bad value refused with its key and value. */
class EngineConfigTest {
    private static EngineConfig read(Map<String, String> props) {
        return EngineConfig.fromProperties("rdma.shuffle.", props::get);
    }

    @Test
    void serverThreads_defaultsToTwo_andIsRead() {
        assertEquals(2, read(Map.of()).serverThreads());
        assertEquals(5, read(Map.of("rdma.shuffle.serverThreads", "5")).serverThreads());
        assertEquals("5", read(Map.of("rdma.shuffle.serverThreads", "5")).describe().get(EngineConfig.KEY_SERVER_THREADS));
    }

    @Test
    void serverThreadsOutOfRangeOrNotANumber_isRefusedNamingTheKey() {
        IllegalArgumentException none = assertThrows(IllegalArgumentException.class,
                () -> read(Map.of("rdma.shuffle.serverThreads", "0")));
        assertEquals("serverThreads must be 1..64, not 0", none.getMessage());
        IllegalArgumentException many = assertThrows(IllegalArgumentException.class,
                () -> read(Map.of("rdma.shuffle.serverThreads", "65")));
        assertEquals("serverThreads must be 1..64, not 65", many.getMessage());
        IllegalArgumentException text = assertThrows(IllegalArgumentException.class,
                () -> read(Map.of("rdma.shuffle.serverThreads", "two")));
        assertTrue(text.getMessage().startsWith("rdma.shuffle.serverThreads=two: "), text.getMessage());
    }

    @Test
    void fetchBufferMemoryBelowOneMebibyte_isRefusedNamingTheKey() {
        assertEquals(1L << 20, read(Map.of("rdma.shuffle.fetchBufferMemory", "1m")).fetchBufferMemory());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> read(Map.of("rdma.shuffle.fetchBufferMemory", "512k")));
        assertEquals("fetchBufferMemory must be at least 1m, not 524288", e.getMessage());
    }

    /** busyPoll unset is the provider's: none where the provider's own threads make the completions. */
    @Test
    void busyPoll_defaultsByProvider_andASetValueHoldsForBoth() {
        EngineConfig auto = read(Map.of());
        assertEquals(java.time.Duration.ZERO, auto.busyPollFor(true));
        assertEquals(java.time.Duration.ofNanos(50_000), auto.busyPollFor(false));
        assertEquals("auto", auto.describe().get(EngineConfig.KEY_BUSY_POLL));
        EngineConfig set = read(Map.of("rdma.shuffle.busyPoll", "20us"));
        assertEquals(java.time.Duration.ofNanos(20_000), set.busyPollFor(true));
        assertEquals(java.time.Duration.ofNanos(20_000), set.busyPollFor(false));
        assertEquals("20us", set.describe().get(EngineConfig.KEY_BUSY_POLL));
        assertEquals(java.time.Duration.ZERO, read(Map.of("rdma.shuffle.busyPoll", "auto")).busyPollFor(true));
    }

    /** handOffFetches unset is the provider's: on the software provider only; a set value holds for both. */
    @Test
    void handOffFetches_defaultsByProvider_andASetValueHoldsForBoth() {
        EngineConfig auto = read(Map.of());
        assertTrue(auto.handOffFetchesFor(true));
        assertTrue(!auto.handOffFetchesFor(false));
        assertEquals("auto", auto.describe().get(EngineConfig.KEY_HAND_OFF_FETCHES));
        EngineConfig off = read(Map.of("rdma.shuffle.handOffFetches", "false"));
        assertTrue(!off.handOffFetchesFor(true) && !off.handOffFetchesFor(false));
        assertEquals("false", off.describe().get(EngineConfig.KEY_HAND_OFF_FETCHES));
        EngineConfig on = read(Map.of("rdma.shuffle.handOffFetches", "TRUE"));
        assertTrue(on.handOffFetchesFor(true) && on.handOffFetchesFor(false));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> read(Map.of("rdma.shuffle.handOffFetches", "yes")));
        assertEquals("rdma.shuffle.handOffFetches=yes: true, false or auto, not yes", e.getMessage());
    }
}
