package org.rdmashuffle.verbs.ibverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Availability;

/** Each cause of unavailability, from synthetic findings: no library, no device, no active port, memlock. */
class IbverbsAvailabilityTest {
    private static final long MIB = 1L << 20;

    @Test
    void missingLibraryComesFirst() {
        Availability a = IbverbsProvider.assess("libibverbs.so.1 could not be loaded (...)", null, 1, List.of(), "x", -1, 0);
        assertFalse(a.available());
        assertTrue(a.cause().startsWith("libibverbs.so.1 could not be loaded"), a.cause());
    }

    @Test
    void noDeviceSaysWhyTheListIsEmpty() {
        Availability enosys = IbverbsProvider.assess(null, "ibv_get_device_list failed: errno 38 ENOSYS", 0, List.of(), null, -1, 0);
        assertFalse(enosys.available());
        assertEquals("ibv_get_device_list failed: errno 38 ENOSYS", enosys.cause());
        Availability empty = IbverbsProvider.assess(null, null, 0, List.of(), null, -1, 0);
        assertTrue(empty.cause().contains("lists no RDMA device"), empty.cause());
        assertTrue(empty.cause().contains("ibverbs-providers"), empty.cause());
        assertTrue(empty.cause().contains("modprobe rdma_rxe"), "a missing rxe module is named: " + empty.cause());
    }

    @Test
    void noActivePortListsThePortsSeen() {
        Availability a = IbverbsProvider.assess(null, null, 2, List.of("mlx5_0 port 1 DOWN", "mlx5_1 port 1 INIT"), null, -1, 0);
        assertFalse(a.available());
        assertEquals("no active port: mlx5_0 port 1 DOWN, mlx5_1 port 1 INIT", a.cause());
    }

    @Test
    void memlockBelowTheMinimumNamesBothAndTheFix() {
        Availability a = IbverbsProvider.assess(null, null, 1, List.of("rxe0 port 1 ACTIVE"), "rxe0 port 1", 8 * MIB, 64 * MIB);
        assertFalse(a.available());
        assertTrue(a.cause().startsWith("memlock limit is 8 MiB, below the 64 MiB needed"), a.cause());
        assertTrue(a.cause().contains("ulimit -l"), a.cause());
    }

    @Test
    void unlimitedOrSufficientMemlockIsAvailable() {
        assertTrue(IbverbsProvider.assess(null, null, 1, List.of(), "rxe0 port 1", -1, 64 * MIB).available());
        Availability a = IbverbsProvider.assess(null, null, 1, List.of(), "rxe0 port 1", 64 * MIB, 64 * MIB);
        assertTrue(a.available());
        assertEquals("rxe0 port 1", a.cause());
    }
}
