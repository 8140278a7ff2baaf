package org.rdmashuffle.verbs.ibverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Availability;
import org.rdmashuffle.verbs.Trouble;

/**
 * Each cause of unavailability, from synthetic findings: an architecture the layouts are not checked on,
 * no library, no device, no active port, memlock.
 */
class IbverbsAvailabilityTest {
    private static final long MIB = 1L << 20;

    @Test
    void x86_64IsTheOneArchitectureTheProviderRunsOn_underEitherOfItsNames() {
        assertEquals(null, IbverbsProvider.platformRefusal("amd64"));
        assertEquals(null, IbverbsProvider.platformRefusal("x86_64"));
        for (String other : List.of("aarch64", "ppc64le", "s390x", "riscv64", "x86")) {
            String why = IbverbsProvider.platformRefusal(other);
            assertEquals("RS10 platform: saw the libibverbs provider's struct layouts are generated and checked on x86-64, "
                    + "and this JVM runs on " + other + "; needs an x86-64 JVM (os.arch amd64 or x86_64) until those layouts "
                    + "are checked on " + other + "; fix: ", why.substring(0, why.indexOf("; fix: ") + "; fix: ".length()));
            assertEquals(Optional.of(Trouble.PLATFORM), Trouble.in(why));
        }
        assertTrue(IbverbsProvider.platformRefusal(null).contains("this JVM runs on an architecture it does not name (os.arch is not set)"),
                IbverbsProvider.platformRefusal(null));
        assertTrue(IbverbsProvider.platformRefusal(" ").contains("os.arch is not set"));
    }

    /** The provider's own probe refuses before it touches libibverbs, whatever the machine has. */
    @Test
    void onAnotherArchitecture_theProbeRefuses_withThatReason() {
        Availability a = IbverbsProvider.instance().probe("aarch64");
        assertFalse(a.available());
        assertEquals(IbverbsProvider.platformRefusal("aarch64"), a.cause());
        Availability here = IbverbsProvider.instance().probe("amd64");
        assertFalse(here.cause() != null && here.cause().startsWith("RS10"), "x86-64 gets the probe's own finding: " + here.cause());
    }

    @Test
    void missingLibraryComesFirst() {
        Availability a = IbverbsProvider.assess("libibverbs.so.1 could not be loaded (...)", null, 1, List.of(), "x", -1, 0, false, false, null);
        assertFalse(a.available());
        assertTrue(a.cause().startsWith("RS01 no-device: saw libibverbs.so.1 could not be loaded"), a.cause());
    }

    @Test
    void noDeviceSaysWhyTheListIsEmpty() {
        Availability enosys = IbverbsProvider.assess(null, "ibv_get_device_list failed: errno 38 ENOSYS", 0, List.of(), null, -1, 0, false, false, null);
        assertFalse(enosys.available());
        assertTrue(enosys.cause().startsWith("RS01 no-device: saw ibv_get_device_list failed: errno 38 ENOSYS; needs "),
                enosys.cause());
        assertTrue(enosys.cause().contains("ib_uverbs"), enosys.cause());
        Availability empty = IbverbsProvider.assess(null, null, 0, List.of(), null, -1, 0, false, false, null);
        assertTrue(empty.cause().contains("lists no RDMA device"), empty.cause());
        assertTrue(empty.cause().contains("ibverbs-providers"), empty.cause());
        assertTrue(empty.cause().contains("modprobe rdma_rxe"), "a missing rxe module is named: " + empty.cause());
    }

    @Test
    void noActivePortListsThePortsSeen() {
        Availability a = IbverbsProvider.assess(null, null, 2, List.of("mlx5_0 port 1 DOWN", "mlx5_1 port 1 INIT"), null, -1, 0, false, false, null);
        assertFalse(a.available());
        assertTrue(a.cause().startsWith("RS02 port-down: saw no active port: mlx5_0 port 1 DOWN, mlx5_1 port 1 INIT; "
                + "needs a port in state ACTIVE; fix: "), a.cause());
    }

    @Test
    void memlockBelowTheMinimumNamesBothAndTheFix() {
        Availability a = IbverbsProvider.assess(null, null, 1, List.of("rxe0 port 1 ACTIVE"), "rxe0 port 1", 8 * MIB, 64 * MIB, false, false, null);
        assertFalse(a.available());
        assertTrue(a.cause().startsWith("RS03 memlock: saw memlock limit is 8 MiB; needs 64 MiB to register memory"), a.cause());
        assertTrue(a.cause().contains("ulimit -l"), a.cause());
    }

    @Test
    void memlockBelowTheMinimum_isNoObstacleToAProcessWithIpcLock() {
        // A container's root process given IPC_LOCK pins beyond its 8 MiB limit (the kernel's own rule).
        assertTrue(IbverbsProvider.assess(null, null, 1, List.of(), "rxe0 port 1", 8 * MIB, 64 * MIB, true, false, null).available());
    }

    @Test
    void memlockBelowTheMinimum_onADeviceWithOnDemandPaging_isAvailable_andSaysMemoryIsRegisteredOnDemand() {
        Availability a = IbverbsProvider.assess(null, null, 1, List.of(), "rxe0 port 1", 8 * MIB, 64 * MIB, false, true, null);
        assertTrue(a.available());
        assertTrue(a.cause().contains("memlock limit 8 MiB") && a.cause().contains("registered on demand (ODP"), a.cause());
        assertFalse(a.cause().contains("page boundary"), a.cause());
    }

    @Test
    void memlockBelowTheMinimum_onADeviceWhosePagingIsRightOnlyFromPageBoundaries_isAvailable_andSaysSo() {
        // rxe in Linux 7.2: the check's unaligned read fails, its reads and sends from page boundaries pass.
        Availability a = IbverbsProvider.assess(null, null, 1, List.of(), "rxe0 port 1", 8 * MIB, 64 * MIB, false, true, null, true);
        assertTrue(a.available());
        assertTrue(a.cause().endsWith("registered on demand (ODP, the device has it) instead, every transfer starting on a page "
                + "boundary (its paging gets others wrong)"), a.cause());
    }

    @Test
    void memlockBelowTheMinimum_onADeviceWhoseOnDemandPagingFailsItsCheck_isUnavailable_sayingBoth() {
        Availability a = IbverbsProvider.assess(null, null, 1, List.of(), "rxe0 port 1", 8 * MIB, 64 * MIB, false, true,
                "rxe0's on-demand paging returned wrong bytes");
        assertFalse(a.available());
        assertTrue(a.cause().startsWith("RS03 memlock: saw memlock limit is 8 MiB; needs 64 MiB to register memory")
                && a.cause().contains("on-demand paging, which would need no pinning, is not usable: rxe0's on-demand paging returned wrong bytes"),
                a.cause());
    }

    @Test
    void ipcLockIsReadFromTheEffectiveCapabilities_notThePermittedOrBoundingOnes() {
        String root = "Name:\tjava\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n";
        assertTrue(IbverbsProvider.ipcLockEffective(root));
        // UID 185 in a pod that added IPC_LOCK: in the bounding set, not effective.
        String uid185 = "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n"
                + "CapBnd:\t00000000a80445fb\n";
        assertFalse(IbverbsProvider.ipcLockEffective(uid185));
        assertTrue(IbverbsProvider.ipcLockEffective("CapEff:\t0000000000004000\n"), "bit 14 alone");
        assertFalse(IbverbsProvider.ipcLockEffective("CapEff:\t0000000000003fff\n"));
        assertFalse(IbverbsProvider.ipcLockEffective("no capability lines"));
    }

    @Test
    void unlimitedOrSufficientMemlockIsAvailable() {
        assertTrue(IbverbsProvider.assess(null, null, 1, List.of(), "rxe0 port 1", -1, 64 * MIB, false, false, null).available());
        Availability a = IbverbsProvider.assess(null, null, 1, List.of(), "rxe0 port 1", 64 * MIB, 64 * MIB, false, false, null);
        assertTrue(a.available());
        assertEquals("rxe0 port 1", a.cause());
    }

    /**
     * What {@code auto} chooses in each case the probe can find (docs/providers.md, "How the choice is made"),
     * from the probe's own verdicts: the software provider where the host has no verbs stack (no library, no
     * device, another architecture), saying it settled, what was lacking and the setting that gives the host's
     * own transport instead; no provider where a device is there but unusable (port down, memlock too small,
     * a probe that failed), so the host's own transport carries the shuffle and is counted by the RS code.
     */
    @Test
    void auto_settlesForTheSoftwareProviderOnlyWhereThereIsNoDevice_andChoosesNothingWhereADeviceIsUnusable() {
        IbverbsProvider ibv = IbverbsProvider.instance();
        org.rdmashuffle.verbs.VerbsProvider software = org.rdmashuffle.verbs.software.SoftwareProvider.instance();
        Availability softwareUsable = software.availability();
        record Case(String what, Availability ibverbs, org.rdmashuffle.verbs.Trouble settledFor) {
        }
        List<Case> noDevice = List.of(
                new Case("no library", IbverbsProvider.assess("libibverbs.so.1 could not be loaded (...)", null, 0, List.of(), null,
                        -1, 0, false, false, null), org.rdmashuffle.verbs.Trouble.NO_DEVICE),
                new Case("no kernel support", IbverbsProvider.assess(null, "ibv_get_device_list failed: errno 38 ENOSYS", 0,
                        List.of(), null, -1, 0, false, false, null), org.rdmashuffle.verbs.Trouble.NO_DEVICE),
                new Case("no device", IbverbsProvider.assess(null, null, 0, List.of(), null, -1, 0, false, false, null),
                        org.rdmashuffle.verbs.Trouble.NO_DEVICE),
                new Case("another architecture", ibv.probe("aarch64"), org.rdmashuffle.verbs.Trouble.PLATFORM));
        for (Case c : noDevice) {
            org.rdmashuffle.verbs.Verbs.Selection s = org.rdmashuffle.verbs.Verbs.auto(ibv, c.ibverbs(), software, softwareUsable);
            assertEquals(software, s.provider(), c.what() + ": " + s.reason());
            assertEquals(c.settledFor(), s.settledFor(), c.what());
            assertTrue(s.reason().startsWith("auto: settled for the software provider (RC over TCP in the JVM, not RDMA)"), s.reason());
            assertTrue(s.reason().contains("not ibverbs: " + c.settledFor().prefix()), s.reason());
            assertTrue(s.reason().endsWith(org.rdmashuffle.verbs.Verbs.HOST_TRANSPORT_INSTEAD), s.reason());
        }
        List<Case> deviceUnusable = List.of(
                new Case("port down", IbverbsProvider.assess(null, null, 1, List.of("mlx5_0 port 1 DOWN"), null, -1, 0, false, false,
                        null), org.rdmashuffle.verbs.Trouble.PORT_DOWN),
                new Case("memlock too small", IbverbsProvider.assess(null, null, 1, List.of("mlx5_0 port 1 ACTIVE"), "mlx5_0 port 1",
                        8 * MIB, 64 * MIB, false, false, null), org.rdmashuffle.verbs.Trouble.MEMLOCK),
                new Case("paging failing its check under a small memlock", IbverbsProvider.assess(null, null, 1, List.of(),
                        "rxe0 port 1", 8 * MIB, 64 * MIB, false, true, "wrong bytes"), org.rdmashuffle.verbs.Trouble.MEMLOCK),
                new Case("a probe that failed", Availability.unavailable("probing libibverbs failed: java.lang.IllegalStateException"),
                        null));
        for (Case c : deviceUnusable) {
            org.rdmashuffle.verbs.Verbs.Selection s = org.rdmashuffle.verbs.Verbs.auto(ibv, c.ibverbs(), software, softwareUsable);
            assertEquals(null, s.provider(), c.what() + ": " + s.reason());
            assertEquals(null, s.settledFor(), c.what());
            assertTrue(s.reason().contains("not ibverbs: " + c.ibverbs().cause()), s.reason());
            assertEquals(java.util.Optional.ofNullable(c.settledFor()), org.rdmashuffle.verbs.Trouble.in(s.reason()),
                    c.what() + ": the reason carries the code the executor is counted by: " + s.reason());
            assertFalse(s.reason().contains("RDMA"), "nothing is carried yet, least of all over RDMA: " + s.reason());
        }
        Availability usable = IbverbsProvider.assess(null, null, 1, List.of(), "mlx5_0 port 1", -1, 64 * MIB, false, false, null);
        org.rdmashuffle.verbs.Verbs.Selection device = org.rdmashuffle.verbs.Verbs.auto(ibv, usable, software, softwareUsable);
        assertEquals(ibv, device.provider(), device.reason());
        assertEquals(null, device.settledFor());
        assertEquals("auto: ibverbs is usable (mlx5_0 port 1)", device.reason());
    }
}
