package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.verbs.Availability;
import org.rdmashuffle.verbs.DeviceAttributes;
import org.rdmashuffle.verbs.Verbs;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.ibverbs.IbverbsProvider;

/**
 * The engine under a container's memlock limit (containerd's 8 MiB for a non-root UID), on a real
 * device. Where the device pages on demand (ODP: ConnectX-5 and later; rxe in Linux 7.2) and its paging
 * passes the data check ({@code OnDemandPagingCheck}: at any offset, or -- rxe in Linux 7.2 and 7.3 --
 * only for transfers from page boundaries, which the engine then keeps to), the engine registers on
 * demand and serves and fetches far more than the limit while pinning nothing; where it does not page
 * on demand (rxe in Linux 6.1), or its paging fails the check, the libibverbs provider is unavailable
 * and says the limit, what it needs, how to raise it and why on-demand paging is no way round it, and
 * {@code auto} chooses no provider, naming it: the engine does not start and the host's own transport
 * carries the shuffle (a host with a device is not left to the software provider, docs/providers.md).
 *
 * <p>Runs only in a JVM started under such a limit: softroce/guest-tests.sh runs this class alone under
 * {@code ulimit -l 8192} with {@code -Drdmashuffle.test.smallMemlock=true} (without which it skips,
 * naming that command; with which a large limit fails it).
 */
@Tag("small-memlock")
class SmallMemlockTest {
    private static final long LIMIT = 8L << 20;

    @Test
    void underAContainersMemlockLimit_theEngineRegistersOnDemand_orTheDeviceIsRefusedNamingTheLimitAndTheFix(@TempDir Path dir)
            throws Exception {
        IbverbsProvider ibverbs = IbverbsProvider.instance();
        long memlock = ibverbs.memlockLimitBytes();
        boolean small = memlock >= 0 && memlock <= LIMIT && !IbverbsProvider.ipcLockEffective();
        String why = "needs a JVM under a memlock limit of at most 8 MiB without CAP_IPC_LOCK on a device (memlock here: "
                + IbverbsProvider.bytes(memlock) + "): softroce/guest-tests.sh runs it under ulimit -l 8192";
        if (!small || !EngineTestSupport.usesDevice()) {
            if (Boolean.getBoolean("rdmashuffle.test.smallMemlock")) {
                fail(why);
            }
            Assumptions.abort(why);
        }
        boolean onDemand;
        try (VerbsContext ctx = ibverbs.devices().getFirst().open();
             org.rdmashuffle.verbs.ProtectionDomain pd = ctx.allocateProtectionDomain()) {
            onDemand = ctx.queryDevice().supportsOnDemandPaging(DeviceAttributes.ODP_ENGINE_RC_CAPS);
            // Pinning twice the limit fails in ibv_reg_mr with ENOMEM: the line names the limit's fix (RS04).
            org.rdmashuffle.verbs.VerbsException enomem = org.junit.jupiter.api.Assertions.assertThrows(
                    org.rdmashuffle.verbs.VerbsException.class,
                    () -> pd.allocateAndRegister(2 * LIMIT, org.rdmashuffle.verbs.Access.LOCAL_WRITE).close());
            assertEquals(java.util.Optional.of(org.rdmashuffle.verbs.Trouble.REGISTRATION_ENOMEM),
                    org.rdmashuffle.verbs.Trouble.in(enomem), enomem.getMessage());
            System.out.println("small memlock: a registration past the limit -- " + enomem.getMessage());
        }
        Availability availability = ibverbs.availability();
        if (!availability.available()) {
            // No on-demand paging, or paging that fails its data check (rxe in Linux 7.2): refused, by name.
            assertTrue(availability.cause().startsWith("RS03 memlock: saw memlock limit is " + IbverbsProvider.bytes(memlock)
                    + "; needs 64 MiB to register memory")
                    && availability.cause().contains("LimitMEMLOCK"), availability.cause());
            if (onDemand) {
                assertTrue(availability.cause().contains("on-demand paging, which would need no pinning, is not usable: "),
                        "a device that says it pages on demand is refused only for a reason: " + availability.cause());
            }
            Verbs.Selection auto = Verbs.select("auto");
            assertEquals(null, auto.provider(), "auto does not settle for the software provider on a device: " + auto.reason());
            assertTrue(auto.reason().contains("ibverbs: RS03 memlock: saw memlock limit is"), "the refusal names why: "
                    + auto.reason());
            System.out.println("small memlock: ibverbs refused -- " + availability.cause());
            return;
        }
        assertTrue(onDemand, "usable under a small limit only on demand: " + availability.cause());
        assertTrue(availability.available(), availability.cause());
        assertTrue(availability.cause().contains("registered on demand (ODP"), availability.cause());
        // 8 outputs of 32 partitions of up to 256 KiB: about 32 MiB, four times the limit.
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 0, 8, 32, 256 << 10)) {
            assertTrue(pair.server.memoryRegistration().onDemand(), pair.server.memoryRegistration().reason());
            assertTrue(pair.client.memoryRegistration().onDemand(), pair.client.memoryRegistration().reason());
            long bytes = pair.outputs.stream().mapToLong(o -> o.data().length).sum();
            assertTrue(bytes > 2 * LIMIT, "moves more than the limit: " + bytes);
            EngineTestSupport.fetchAllIntact(pair.client, pair.server.address(), pair.outputs);
            long pinned = vmPinBytes();
            System.out.println("small memlock: " + bytes + " bytes served and fetched on demand, VmPin " + pinned + " bytes, "
                    + pair.server.memoryRegistration().reason());
            assertTrue(pinned < LIMIT / 8, "almost nothing pinned: VmPin " + pinned);
        }
    }

    /** Pages this process has pinned (the kernel's pinned_vm: every pinned registration counts). */
    private static long vmPinBytes() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmPin:")) {
                return Long.parseLong(line.substring(6).trim().split("\\s+")[0]) * 1024;
            }
        }
        throw new IllegalStateException("no VmPin in /proc/self/status");
    }
}
