package org.rdmashuffle.core.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.DeviceAttributes;
import org.rdmashuffle.verbs.OnDemandPagingCheck;

/** Pinned or on demand: each setting against devices with and without ODP, under limits small and large. */
class MemoryRegistrationTest {
    private static final long MIB = 1L << 20;
    private static final long UNLIMITED = -1;
    private static final long MIN_PINNED = 12 * MIB;

    private static DeviceAttributes device(long odpGeneral, int odpRc) {
        return new DeviceAttributes("fw", 1, 0, 0, 0, Long.MAX_VALUE, 1024, 1024, 16, 16, 1024, 4096, 1024, 1024, 16, 16,
                DeviceAttributes.AtomicCapability.HCA, 1024, 1024, 1, 1, odpGeneral, odpRc, 0, 0, 0);
    }

    private static final DeviceAttributes ODP = device(DeviceAttributes.ODP_SUPPORT, 0x3f);
    private static final DeviceAttributes NO_ODP = device(0, 0);
    /** ODP for reads only (an older NIC): not enough for receive and send buffers too. */
    private static final DeviceAttributes READ_ONLY_ODP = device(DeviceAttributes.ODP_SUPPORT, DeviceAttributes.ODP_SUPPORT_READ);

    /** The data check of a device whose on-demand paging gives every byte. */
    private static final java.util.function.Supplier<OnDemandPagingCheck.Result> WORKS = () -> new OnDemandPagingCheck.Result(null, null);

    private static EngineConfig config(String onDemandPaging) {
        return EngineConfig.defaults().set(EngineConfig.KEY_ON_DEMAND_PAGING, onDemandPaging);
    }

    @Test
    void auto_registersOnDemand_onlyWhereTheDevicePagesEverythingOnDemand_andPinningIsLimited() {
        MemoryRegistration small = MemoryRegistration.choose(config("auto"), "rxe0", ODP, 8 * MIB, MIN_PINNED, WORKS);
        assertTrue(small.onDemand(), small.reason());
        assertTrue(small.reason().contains("memlock limit 8 MiB") && small.reason().contains("rxe0 pages on demand"), small.reason());
        assertEquals(Access.REMOTE_READ | Access.ON_DEMAND, small.access(Access.REMOTE_READ));

        MemoryRegistration unlimited = MemoryRegistration.choose(config("auto"), "rxe0", ODP, UNLIMITED, MIN_PINNED, WORKS);
        assertFalse(unlimited.onDemand(), "a pinned page costs no fault: " + unlimited.reason());
        assertEquals(Access.REMOTE_READ, unlimited.access(Access.REMOTE_READ));

        MemoryRegistration noOdp = MemoryRegistration.choose(config("auto"), "mlx4_0", NO_ODP, 64 * MIB, MIN_PINNED, WORKS);
        assertFalse(noOdp.onDemand());
        assertTrue(noOdp.reason().contains("mlx4_0 has no on-demand paging"), noOdp.reason());
        assertFalse(MemoryRegistration.choose(config("auto"), "mlx5_0", READ_ONLY_ODP, 64 * MIB, MIN_PINNED, WORKS).onDemand());
    }

    @Test
    void true_needsTheDevicesOdp_andSaysWhatItLacks() {
        assertTrue(MemoryRegistration.choose(config("true"), "rxe0", ODP, UNLIMITED, MIN_PINNED, WORKS).onDemand());
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> MemoryRegistration.choose(config("true"), "rxe0", READ_ONLY_ODP, UNLIMITED, MIN_PINNED, WORKS));
        assertTrue(e.getMessage().startsWith("onDemandPaging=true, but rxe0 has no on-demand paging")
                && e.getMessage().contains("rc caps 0x8, needs 0x2b"), e.getMessage());
    }

    @Test
    void false_pins_andRefusesALimitBelowWhatItPinsToStart_namingBothAndTheFix() {
        assertFalse(MemoryRegistration.choose(config("false"), "rxe0", ODP, 64 * MIB, MIN_PINNED, WORKS).onDemand());
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> MemoryRegistration.choose(config("false"), "rxe0", ODP, 8 * MIB, MIN_PINNED, WORKS));
        assertTrue(e.getMessage().startsWith("RS03 memlock: saw memlock limit 8 MiB; needs 12 MiB pinned to start")
                && e.getMessage().contains("ulimit -l") && e.getMessage().contains("onDemandPaging=auto"), e.getMessage());
    }

    @Test
    void aDeviceWhoseOnDemandPagingFailsTheDataCheck_isNotUsedOnDemand_andALimitTooSmallToPinSaysBoth() {
        java.util.function.Supplier<OnDemandPagingCheck.Result> wrongBytes = () -> new OnDemandPagingCheck.Result(
                "rxe0's on-demand paging returned wrong bytes", "rxe0's on-demand paging returned wrong bytes even from page boundaries");
        MemoryRegistration pinned = MemoryRegistration.choose(config("auto"), "rxe0", ODP, 256 * MIB, MIN_PINNED, wrongBytes);
        assertFalse(pinned.onDemand());
        assertTrue(pinned.reason().contains("returned wrong bytes"), pinned.reason());
        IllegalStateException small = assertThrows(IllegalStateException.class,
                () -> MemoryRegistration.choose(config("auto"), "rxe0", ODP, 8 * MIB, MIN_PINNED, wrongBytes));
        assertTrue(small.getMessage().startsWith("RS03 memlock: saw memlock limit 8 MiB; needs 12 MiB pinned to start")
                && small.getMessage().contains("returned wrong bytes") && small.getMessage().contains("fix: raise the limit"),
                small.getMessage());
        IllegalStateException forced = assertThrows(IllegalStateException.class,
                () -> MemoryRegistration.choose(config("true"), "rxe0", ODP, UNLIMITED, MIN_PINNED, wrongBytes));
        assertTrue(forced.getMessage().contains("returned wrong bytes"), forced.getMessage());
        // The check runs only where on demand would be chosen: not for an unlimited process on auto.
        MemoryRegistration.choose(config("auto"), "rxe0", ODP, UNLIMITED, MIN_PINNED, () -> {
            throw new AssertionError("checked without need");
        });
    }

    /** rxe in Linux 7.2 and 7.3: wrong bytes for transfers that start inside a page, every byte from page boundaries. */
    private static final java.util.function.Supplier<OnDemandPagingCheck.Result> RIGHT_FROM_PAGE_STARTS = () ->
            new OnDemandPagingCheck.Result("rxe0's on-demand paging returned wrong bytes", null);

    @Test
    void aDeviceRightOnlyFromPageBoundaries_isUsedOnDemandWithPageAlignedReads_unlessTheyAreTurnedOff() {
        MemoryRegistration small = MemoryRegistration.choose(config("auto"), "rxe0", ODP, 8 * MIB, MIN_PINNED, RIGHT_FROM_PAGE_STARTS);
        assertTrue(small.onDemand() && small.pageAlignedReads(), small.reason());
        assertTrue(small.reason().contains("every transfer from a page boundary (rxe0's paging gets others wrong)"), small.reason());
        MemoryRegistration forced = MemoryRegistration.choose(config("true"), "rxe0", ODP, UNLIMITED, MIN_PINNED, RIGHT_FROM_PAGE_STARTS);
        assertTrue(forced.onDemand() && forced.pageAlignedReads(), forced.reason());
        // Where pinning is not limited, auto pins: no page-aligned reads are needed for our own memory.
        MemoryRegistration unlimited = MemoryRegistration.choose(config("auto"), "rxe0", ODP, UNLIMITED, MIN_PINNED, RIGHT_FROM_PAGE_STARTS);
        assertFalse(unlimited.onDemand() || unlimited.pageAlignedReads(), unlimited.reason());

        EngineConfig off = config("auto").set(EngineConfig.KEY_PAGE_ALIGNED_READS, "false");
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> MemoryRegistration.choose(off, "rxe0", ODP, 8 * MIB, MIN_PINNED, RIGHT_FROM_PAGE_STARTS));
        assertTrue(e.getMessage().startsWith("RS03 memlock: saw memlock limit 8 MiB")
                && e.getMessage().contains("right from page boundaries, but pageAlignedReads=false"), e.getMessage());
        MemoryRegistration offUnlimited = MemoryRegistration.choose(off.set(EngineConfig.KEY_ON_DEMAND_PAGING, "auto"), "rxe0", ODP,
                256 * MIB, MIN_PINNED, RIGHT_FROM_PAGE_STARTS);
        assertFalse(offUnlimited.onDemand(), offUnlimited.reason());

        // true: every read from a page boundary, on any device (the host suite's software provider too).
        MemoryRegistration on = MemoryRegistration.choose(config("false").set(EngineConfig.KEY_PAGE_ALIGNED_READS, "true"), "soft0",
                NO_ODP, UNLIMITED, MIN_PINNED, WORKS);
        assertTrue(!on.onDemand() && on.pageAlignedReads() && on.reason().endsWith("pageAlignedReads=true"), on.reason());
        assertFalse(MemoryRegistration.choose(config("auto"), "rxe0", ODP, 8 * MIB, MIN_PINNED, WORKS).pageAlignedReads(),
                "a device right at any offset reads at any offset");
    }

    @Test
    void aSettingThatIsNotOneOfTheThree_isRefusedNamingTheKey() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EngineConfig.fromProperties("x.", k -> k.equals("x.onDemandPaging") ? "sometimes" : null));
        assertTrue(e.getMessage().startsWith("x.onDemandPaging=sometimes"), e.getMessage());
        IllegalArgumentException aligned = assertThrows(IllegalArgumentException.class,
                () -> EngineConfig.fromProperties("x.", k -> k.equals("x.pageAlignedReads") ? "mostly" : null));
        assertTrue(aligned.getMessage().startsWith("x.pageAlignedReads=mostly"), aligned.getMessage());
    }
}
