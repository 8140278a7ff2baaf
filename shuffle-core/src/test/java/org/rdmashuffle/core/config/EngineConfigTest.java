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

    /**
     * Every setting the engine describes is read from a property source (an adapter's prefix): a key
     * that {@code set} takes but {@code keys()} does not list is silently ignored by every adapter.
     */
    @Test
    void everyDescribedSettingIsReadUnderAnAdaptersPrefix() {
        for (String key : EngineConfig.defaults().describe().keySet()) {
            assertTrue(EngineConfig.keys().contains(key), key + " is described but never read from a property source");
        }
        assertEquals(EngineConfig.MemoryWindows.AUTO, read(Map.of("rdma.shuffle.memoryWindows", "auto")).memoryWindows());
        assertEquals(EngineConfig.MemoryWindows.FALSE, read(Map.of()).memoryWindows());
    }

    @Test
    void layoutCacheMemoryIsRead_andTooLittleIsRefusedNamingTheKey() {
        assertEquals(16L << 20, read(Map.of()).layoutCacheMemory());
        assertEquals(64L << 20, read(Map.of("rdma.shuffle.layoutCacheMemory", "64m")).layoutCacheMemory());
        IllegalArgumentException small = assertThrows(IllegalArgumentException.class,
                () -> read(Map.of("rdma.shuffle.layoutCacheMemory", "1k")));
        assertEquals("rdma.shuffle.layoutCacheMemory=1k: out of range; expected at least 64k", small.getMessage());
    }

    @Test
    void serverThreadsOutOfRangeOrNotANumber_isRefusedNamingTheKey() {
        IllegalArgumentException none = assertThrows(IllegalArgumentException.class,
                () -> read(Map.of("rdma.shuffle.serverThreads", "0")));
        assertEquals("rdma.shuffle.serverThreads=0: out of range; expected 1..64", none.getMessage());
        IllegalArgumentException many = assertThrows(IllegalArgumentException.class,
                () -> read(Map.of("rdma.shuffle.serverThreads", "65")));
        assertEquals("rdma.shuffle.serverThreads=65: out of range; expected 1..64", many.getMessage());
        IllegalArgumentException text = assertThrows(IllegalArgumentException.class,
                () -> read(Map.of("rdma.shuffle.serverThreads", "two")));
        assertEquals("rdma.shuffle.serverThreads=two: not a whole number; expected 1..64", text.getMessage());
    }

    @Test
    void fetchBufferMemoryBelowOneMebibyte_isRefusedNamingTheKey() {
        assertEquals(1L << 20, read(Map.of("rdma.shuffle.fetchBufferMemory", "1m")).fetchBufferMemory());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> read(Map.of("rdma.shuffle.fetchBufferMemory", "512k")));
        assertEquals("rdma.shuffle.fetchBufferMemory=512k: out of range; expected at least 1m", e.getMessage());
    }

    /** A provider as the engine sees it: only whether it completes on threads of its own. */
    private static org.rdmashuffle.verbs.VerbsProvider provider(boolean ownThreads) {
        return new org.rdmashuffle.verbs.VerbsProvider() {
            @Override
            public String name() {
                return ownThreads ? "own-threads" : "device";
            }

            @Override
            public org.rdmashuffle.verbs.Availability availability() {
                return org.rdmashuffle.verbs.Availability.ok("a stub");
            }

            @Override
            public java.util.List<org.rdmashuffle.verbs.VerbsDevice> devices() {
                return java.util.List.of();
            }

            @Override
            public boolean completesOnItsOwnThreads() {
                return ownThreads;
            }
        };
    }

    private static final org.rdmashuffle.verbs.VerbsProvider SOFTWARE = provider(true);
    private static final org.rdmashuffle.verbs.VerbsProvider DEVICE = provider(false);

    /** busyPoll unset is the provider's: none where the provider's own threads make the completions. */
    @Test
    void busyPoll_defaultsByProvider_andASetValueHoldsForBoth() {
        EngineConfig auto = read(Map.of());
        assertEquals(java.time.Duration.ZERO, auto.busyPollOn(SOFTWARE));
        assertEquals(java.time.Duration.ofNanos(50_000), auto.busyPollOn(DEVICE));
        assertEquals("auto", auto.describe().get(EngineConfig.KEY_BUSY_POLL));
        EngineConfig set = read(Map.of("rdma.shuffle.busyPoll", "20us"));
        assertEquals(java.time.Duration.ofNanos(20_000), set.busyPollOn(SOFTWARE));
        assertEquals(java.time.Duration.ofNanos(20_000), set.busyPollOn(DEVICE));
        assertEquals("20us", set.describe().get(EngineConfig.KEY_BUSY_POLL));
        assertEquals(java.time.Duration.ZERO, read(Map.of("rdma.shuffle.busyPoll", "auto")).busyPollOn(SOFTWARE));
    }

    /** handOffFetches unset is the provider's: on a provider completing on its own threads only; a set value holds for both. */
    @Test
    void handOffFetches_defaultsByProvider_andASetValueHoldsForBoth() {
        EngineConfig auto = read(Map.of());
        assertTrue(auto.handOffFetchesOn(SOFTWARE));
        assertTrue(!auto.handOffFetchesOn(DEVICE));
        assertEquals("auto", auto.describe().get(EngineConfig.KEY_HAND_OFF_FETCHES));
        EngineConfig off = read(Map.of("rdma.shuffle.handOffFetches", "false"));
        assertTrue(!off.handOffFetchesOn(SOFTWARE) && !off.handOffFetchesOn(DEVICE));
        assertEquals("false", off.describe().get(EngineConfig.KEY_HAND_OFF_FETCHES));
        EngineConfig on = read(Map.of("rdma.shuffle.handOffFetches", "TRUE"));
        assertTrue(on.handOffFetchesOn(SOFTWARE) && on.handOffFetchesOn(DEVICE));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> read(Map.of("rdma.shuffle.handOffFetches", "yes")));
        assertEquals("rdma.shuffle.handOffFetches=yes: not one of the choices; expected auto, true or false", e.getMessage());
    }

    /** The software provider's settings go to it as settings; its address follows the engine's unless set, never a wildcard. */
    @Test
    void providerSettings_carryTheSoftwareProvidersListener() {
        assertEquals(Map.of("software.bindAddress", "127.0.0.1", "software.port", "0", "software.sendfile", "false"),
                read(Map.of()).providerSettings().values());
        assertEquals("10.0.0.7", read(Map.of("rdma.shuffle.bindAddress", "10.0.0.7")).providerSettings()
                .get("software.bindAddress", null));
        assertEquals("127.0.0.1", read(Map.of("rdma.shuffle.bindAddress", "0.0.0.0")).providerSettings()
                .get("software.bindAddress", null));
        EngineConfig set = read(Map.of("rdma.shuffle.bindAddress", "0.0.0.0", "rdma.shuffle.software.bindAddress", "10.0.0.8",
                "rdma.shuffle.software.port", "7000", "rdma.shuffle.software.sendfile", "true"));
        assertEquals(Map.of("software.bindAddress", "10.0.0.8", "software.port", "7000", "software.sendfile", "true"),
                set.providerSettings().values());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> read(Map.of("rdma.shuffle.software.port", "70000")));
        assertEquals("rdma.shuffle.software.port=70000: out of range; expected 0..65535 (0: any free port)", e.getMessage());
    }
}
