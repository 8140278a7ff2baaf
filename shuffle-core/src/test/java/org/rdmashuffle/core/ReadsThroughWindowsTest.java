package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.protocol.BlockDescriptor;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.server.ServingWindows;
import org.rdmashuffle.verbs.WorkCompletionStatus;

/**
 * A node's service whose reducers read through memory windows ({@code memoryWindows}): the fetch path
 * works through them, an idle reducer's access is taken back at its lease's end without the region
 * going, and windows go before their regions. The attack windows stop, a descriptor replayed on
 * another connection, is in {@link HostileTenantTest}.
 */
@org.junit.jupiter.api.extension.ExtendWith(NoThreadOutlivesTheTest.class)
class ReadsThroughWindowsTest {
    @TempDir
    Path dir;

    private static EngineConfig withWindows() {
        return EngineTestSupport.smallConfig().set(EngineConfig.KEY_MEMORY_WINDOWS, "true");
    }

    /**
     * More outputs than the application has bind slots, fetched by a reducer engine: every block
     * arrives intact (answers that need more windows than slots wait for binds to complete), one
     * window per output on the reducer's one connection.
     */
    @Test
    void everyBlockOfMoreOutputsThanBindSlotsArrivesThroughWindows() throws Exception {
        int outputs = ServingWindows.BIND_SLOTS + 44;
        try (ServiceNode node = new ServiceNode(withWindows())) {
            assertTrue(node.service.windowUse().on(), node.service.windowUse().reason());
            fetchAllThroughOneReducer(node, registerOutputs(node, 0, outputs, 3, 600));
            ServingWindows w = node.service.tenantOf("app-a").windows();
            assertEquals(1, node.service.counters().servingConnections(), "one connection");
            assertEquals(outputs, w.windows(), "one window per output read on the connection");
            assertEquals(outputs, w.binds(), "each bound once: later answers reuse it");
        }
    }

    /**
     * A reducer that stops asking loses its windows at its lease's end (the timer takes them back):
     * its descriptor is refused from then on, while the region stays registered and another reducer
     * of the application is served through a window of its own.
     */
    @Test
    void anIdleReducersWindowIsTakenBackAtItsLeaseEndWhileTheRegionServesOthers() throws Exception {
        // The lease is the fetch timeout: one second.
        try (ServiceNode node = new ServiceNode(withWindows().set(EngineConfig.KEY_FETCH_TIMEOUT, "1s"))) {
            EngineTestSupport.MapOutput b = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("idle")), 0, 3, 4,
                    EngineTestSupport.size(16_000), 7);
            node.service.registerMapOutput("app-b", 0, 3, b.file(), b.offsets());
            BlockId whole = new BlockId(0, 3, 0, 4);
            try (HostileReducer idle = new HostileReducer(node.clientProvider, node.service.address(), "app-b", ServiceNode.SECRET_B);
                 HostileReducer other = new HostileReducer(node.clientProvider, node.service.address(), "app-b", ServiceNode.SECRET_B)) {
                idle.postReceives();
                other.postReceives();
                BlockDescriptor kept = idle.describe(0, List.of(whole)).getFirst();
                assertEquals(WorkCompletionStatus.SUCCESS, idle.read(kept));
                ServingWindows w = node.service.tenantOf("app-b").windows();
                EngineTestSupport.eventually("the idle reducer's window taken back", () -> w.takenBack() == 1);
                assertEquals(1, node.service.tenantOf("app-b").registry().registeredRegions(), "the region stays");

                assertEquals(WorkCompletionStatus.REM_ACCESS_ERR, idle.read(kept), "its key is refused after the lease");
                BlockDescriptor fresh = other.describe(0, List.of(whole)).getFirst();
                assertEquals(WorkCompletionStatus.SUCCESS, other.read(fresh));
                assertArrayEquals(b.bytes(whole), other.landed((int) fresh.length()));
            }
        }
    }

    /**
     * An application's outputs are forgotten while a reducer holds windows over them: the windows go
     * first (a device refuses to deregister a region with a window bound to it, rxe with EINVAL), so
     * every region is deregistered and nothing is left.
     */
    @Test
    void forgettingAnApplicationsOutputsTakesTheirWindowsFirst() throws Exception {
        try (ServiceNode node = new ServiceNode(withWindows())) {
            fetchAllThroughOneReducer(node, registerOutputs(node, 1, 4, 2, 2_000));
            ServingWindows w = node.service.tenantOf("app-a").windows();
            assertEquals(4, w.windows());
            node.service.tenantOf("app-a").registry().unregisterShuffle("app-a", 1);
            assertEquals(0, w.windows(), "every window went with its region");
            assertEquals(0, node.service.tenantOf("app-a").registry().registeredRegions());
        }
    }

    /**
     * An application whose reducer connections hold as many windows as it may
     * ({@code maxMemoryWindowsPerApplication}), each used within the lease, is answered "busy" for an
     * output that needs another, and nothing is allocated for it; once the lease has passed for a
     * window (the timer takes it back, or the next answer that needs room does) the output is served.
     */
    @Test
    void anApplicationHoldingAsManyWindowsAsItMayIsAnsweredBusy_andServedOnceOneIsIdlePastItsLease() throws Exception {
        EngineConfig config = withWindows().set(EngineConfig.KEY_MAX_MEMORY_WINDOWS_PER_APPLICATION, "2")
                .set(EngineConfig.KEY_FETCH_TIMEOUT, "1s"); // the lease
        try (ServiceNode node = new ServiceNode(config)) {
            List<EngineTestSupport.MapOutput> outputs = registerOutputs(node, 0, 3, 2, 2_000);
            try (HostileReducer r = new HostileReducer(node.clientProvider, node.service.address(), "app-a", ServiceNode.SECRET_A)) {
                r.postReceives();
                for (int m = 0; m < 2; m++) {
                    assertEquals(WorkCompletionStatus.SUCCESS, r.read(r.describe(0, List.of(new BlockId(0, m, 0, 2))).getFirst()));
                }
                ServingWindows w = node.service.tenantOf("app-a").windows();
                assertEquals(2, w.windows());
                BlockId third = new BlockId(0, 2, 0, 2);
                Message refused = r.ask(new Message.FetchRequest(1, 0, List.of(third)));
                assertTrue(refused instanceof Message.ErrorResponse e && e.reason().contains("busy"), String.valueOf(refused));
                assertEquals(2, w.windows(), "nothing allocated for the refused output");

                Thread.sleep(1_500); // past the lease of both windows: neither was named since
                BlockDescriptor d = r.describe(0, List.of(third)).getFirst();
                assertEquals(WorkCompletionStatus.SUCCESS, r.read(d));
                assertArrayEquals(outputs.get(2).bytes(third), r.landed((int) d.length()));
                assertTrue(w.windows() <= 2, "never more than the limit: " + w.windows());
                assertTrue(w.takenBack() >= 1, "an idle window made room");
            }
        }
    }

    /**
     * One request naming more outputs than the application has bind slots, with the window limit one
     * above the slots and every window inside its lease: the answer waits for its first binds to
     * complete, then allocates the one window left and is answered "busy" naming the next block.
     * Nothing beyond the limit is allocated, and the windows already bound serve the next request.
     */
    @Test
    void aRequestThatWaitedForBindSlots_thenMeetsTheWindowLimit_isAnsweredBusyNamingTheBlock() throws Exception {
        int limit = ServingWindows.BIND_SLOTS + 1;
        EngineConfig config = withWindows().set(EngineConfig.KEY_MAX_MEMORY_WINDOWS_PER_APPLICATION, Integer.toString(limit));
        try (ServiceNode node = new ServiceNode(config)) {
            Path d = Files.createDirectories(dir.resolve("over-the-limit"));
            List<BlockId> blocks = new ArrayList<>();
            List<EngineTestSupport.MapOutput> outputs = new ArrayList<>();
            for (int m = 0; m <= limit; m++) {
                EngineTestSupport.MapOutput o = EngineTestSupport.writeMapOutput(d, 0, m, new int[] {100}, m);
                node.service.registerMapOutput("app-a", 0, m, o.file(), o.offsets());
                outputs.add(o);
                blocks.add(BlockId.of(0, m, 0));
            }
            try (HostileReducer r = new HostileReducer(node.clientProvider, node.service.address(), "app-a", ServiceNode.SECRET_A)) {
                r.postReceives();
                ServingWindows w = node.service.tenantOf("app-a").windows();
                Message refused = r.ask(new Message.FetchRequest(1, 0, blocks));
                assertTrue(refused instanceof Message.ErrorResponse e && e.reason().contains("busy")
                        && blocks.getLast().equals(e.block()), String.valueOf(refused));
                assertEquals(limit, w.windows(), "the limit, and not one window more");
                assertTrue(w.binds() >= ServingWindows.BIND_SLOTS, "the first binds were posted before the wait: " + w.binds());

                List<BlockId> within = blocks.subList(0, limit);
                List<BlockDescriptor> described = r.describe(0, within);
                for (int m : new int[] {0, limit - 1}) {
                    BlockDescriptor one = described.get(m);
                    assertEquals(WorkCompletionStatus.SUCCESS, r.read(one), "output " + m);
                    assertArrayEquals(outputs.get(m).bytes(within.get(m)), r.landed((int) one.length()));
                }
                assertEquals(limit, w.windows(), "served through the windows already bound");
            }
        }
    }

    /** Writes {@code count} outputs of shuffle {@code shuffle} for application a and registers them with the service. */
    private List<EngineTestSupport.MapOutput> registerOutputs(ServiceNode node, int shuffle, int count, int partitions,
                                                              int maxPartitionBytes) throws java.io.IOException {
        Path d = Files.createDirectories(dir.resolve("shuffle-" + shuffle));
        List<EngineTestSupport.MapOutput> written = new ArrayList<>();
        for (int m = 0; m < count; m++) {
            EngineTestSupport.MapOutput o = EngineTestSupport.writeMapOutput(d, shuffle, m, partitions, maxPartitionBytes, m);
            node.service.registerMapOutput("app-a", shuffle, m, o.file(), o.offsets());
            written.add(o);
        }
        return written;
    }

    /** A reducer engine of application a fetches every block of {@code outputs}: all intact. */
    private static void fetchAllThroughOneReducer(ServiceNode node, List<EngineTestSupport.MapOutput> outputs)
            throws InterruptedException {
        EngineTestSupport.fetchAllIntact(node.reducer("app-a", ServiceNode.SECRET_A), node.service.address(), outputs);
    }
}
