package org.rdmashuffle.core.transport;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.DeviceAttributes;

/** Windows or plain regions: each setting against devices with and without type 2 windows, and what else rules them out. */
class WindowUseTest {
    private static DeviceAttributes device(int capFlags, int maxMw) {
        return new DeviceAttributes("fw", 1, 0, 0, 0, Long.MAX_VALUE, 1024, 1024, 16, 16, 1024, 4096, 1024, 1024, 16, 16,
                DeviceAttributes.AtomicCapability.HCA, 1024, 1024, 1, 1, 0, 0, capFlags, 0, maxMw);
    }

    private static final DeviceAttributes TYPE_2B = device(DeviceAttributes.DEVICE_MEM_WINDOW
            | DeviceAttributes.DEVICE_MEM_WINDOW_TYPE_2B, 1 << 19);
    /** Type 1 only: bound by ibv_bind_mw to no QP, so no use against a replayed key. */
    private static final DeviceAttributes TYPE_1_ONLY = device(DeviceAttributes.DEVICE_MEM_WINDOW, 1 << 19);
    private static final DeviceAttributes NONE = device(0, 0);

    private static EngineConfig config(String memoryWindows) {
        return EngineConfig.defaults().set(EngineConfig.KEY_MEMORY_WINDOWS, memoryWindows);
    }

    @Test
    void offByDefaultWhateverTheDevice() {
        WindowUse w = WindowUse.choose(EngineConfig.defaults(), TYPE_2B, MemoryRegistration.PINNED);
        assertFalse(w.on());
        assertTrue(w.reason().contains("memoryWindows=false"), w.reason());
    }

    @Test
    void autoAndTrueUseTypeTwoWindowsWhereTheDeviceHasThem() {
        for (String setting : new String[] {"auto", "true"}) {
            WindowUse w = WindowUse.choose(config(setting), TYPE_2B, MemoryRegistration.PINNED);
            assertTrue(w.on(), w.reason());
            assertTrue(w.reason().contains("type 2B"), w.reason());
            assertFalse(w.refusedWhatWasAskedFor(config(setting)));
        }
    }

    @Test
    void aDeviceWithoutTypeTwoWindowsGetsPlainRegionsWithTheReason_aWarningOnlyWhenAskedForByTrue() {
        for (DeviceAttributes d : new DeviceAttributes[] {TYPE_1_ONLY, NONE}) {
            WindowUse auto = WindowUse.choose(config("auto"), d, MemoryRegistration.PINNED);
            assertFalse(auto.on());
            assertTrue(auto.reason().contains("no type 2 memory windows"), auto.reason());
            assertFalse(auto.refusedWhatWasAskedFor(config("auto")));
            assertTrue(WindowUse.choose(config("true"), d, MemoryRegistration.PINNED).refusedWhatWasAskedFor(config("true")));
        }
    }

    @Test
    void moreThanOneQueuePairPerPeerOrOnDemandMemoryRuleWindowsOut() {
        WindowUse qps = WindowUse.choose(config("true").set(EngineConfig.KEY_QPS_PER_PEER, "2"), TYPE_2B,
                MemoryRegistration.PINNED);
        assertFalse(qps.on());
        assertTrue(qps.reason().contains("qpsPerPeer=2"), qps.reason());
        WindowUse odp = WindowUse.choose(config("true"), TYPE_2B, new MemoryRegistration(true, "on demand"));
        assertFalse(odp.on());
        assertTrue(odp.reason().contains("on demand"), odp.reason());
    }

    @Test
    void nonsenseIsRefusedNamingTheSetting() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> config("sometimes"));
        assertTrue(e.getMessage().contains(EngineConfig.KEY_MEMORY_WINDOWS), e.getMessage());
    }
}
