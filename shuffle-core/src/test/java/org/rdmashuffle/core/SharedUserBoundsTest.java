package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.control.ControlClient;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.server.ServiceUsage;
import org.rdmashuffle.verbs.WorkCompletionStatus;

/**
 * The shared service against a user running many applications, round three: what a node's service
 * bounds per user holds for the user's applications together, end to end (applications here share a
 * user, as a NodeManager names them: {@link ServiceNode#start}), and holds across their stops; a stop
 * racing a CONNECT frees everything of its tenant; requests waiting off the poller are bounded in
 * number and leave no timer task behind. One test per attack, named after it.
 */
@ExtendWith(NoThreadOutlivesTheTest.class)
class SharedUserBoundsTest {
    private static final Duration CALL = Duration.ofSeconds(10);

    @TempDir
    Path dir;

    private static boolean busy(Message m) {
        return m instanceof Message.ErrorResponse e && e.reason().contains("busy");
    }

    /**
     * Two applications of one user stop while each has a control connection and a data connection
     * open. Their removals were charged to a user named after the application (both services had
     * forgotten it by then), so the real user kept them for ever: two stops, and at a bound of two the
     * user's next application was locked out until the NodeManager restarted. The counts go back to
     * the user they were charged to, and the user's next application gets its connections.
     */
    @Test
    void twoStopsWithConnectionsOpenDoNotLockTheirUserOut() throws Exception {
        EngineConfig config = EngineTestSupport.smallConfig().set(EngineConfig.KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION, "2")
                .set(EngineConfig.KEY_MAX_SERVED_CONNECTIONS_PER_USER, "2");
        try (ServiceNode node = new ServiceNode(config)) {
            for (String app : List.of("app-1", "app-2")) {
                byte[] secret = node.start(app, "alice");
                try (HostileReducer r = new HostileReducer(node.clientProvider, node.service.address(), app, secret)) {
                    assertEquals(1, node.service.usage().countOfUser(ServiceUsage.Kind.DATA, "alice"));
                    node.stop(app); // with its connections open
                    EngineTestSupport.eventually(app + "'s stop is done and its connections counted out",
                            () -> node.service.stopsUnderWay() == 0 && node.service.usage().count(ServiceUsage.Kind.DATA) == 0
                                    && node.service.usage().count(ServiceUsage.Kind.CONTROL) == 0);
                }
            }
            for (ServiceUsage.Kind k : List.of(ServiceUsage.Kind.CONTROL, ServiceUsage.Kind.DATA)) {
                assertEquals(0, node.service.usage().countOfUser(k, "alice"), k + " left charged to alice after her stops");
                assertEquals(0, node.service.usage().countOfUser(k, "app-1"), k + " removed from a user named after the application");
            }
            byte[] third = node.start("app-3", "alice");
            try (HostileReducer one = new HostileReducer(node.clientProvider, node.service.address(), "app-3", third);
                 HostileReducer two = new HostileReducer(node.clientProvider, node.service.address(), "app-3", third)) {
                assertEquals(2, node.service.usage().countOfUser(ServiceUsage.Kind.DATA, "alice"));
            }
        }
    }

    /**
     * One user's many small applications took every tenant slot of the node (each a PD, an SRQ and
     * pinned pools). A user's applications hold at most half the node's tenants: here the node fits
     * four on the software provider (8,000 receive and 16 send buffers each, against a completion queue
     * of 32,768 entries; a device's may hold fewer), the user's next after its half is
     * refused, another user's application is served, and the user's stopped application gives its
     * place back once its resources are freed.
     */
    @Test
    void oneUsersApplicationsCannotTakeEveryTenantSlotOfTheNode() throws Exception {
        EngineConfig config = EngineTestSupport.smallConfig().set(EngineConfig.KEY_RECEIVE_BUFFERS, "8000")
                .set(EngineConfig.KEY_RECEIVE_BUFFER_SIZE, "4k").set(EngineConfig.KEY_REGISTERED_MEMORY_LIMIT, "1g");
        try (ServiceNode node = new ServiceNode(config)) {
            ServiceUsage.Bound tenants = node.service.usage().bound(ServiceUsage.Kind.TENANTS);
            assertTrue(tenants.node() >= 2, "at least two tenants fit a completion queue: " + tenants);
            assertEquals(tenants.node() / 2, tenants.perUser(), "a user's applications: half the tenants that fit");
            int share = (int) tenants.perUser();
            List<HostileReducer> held = new ArrayList<>();
            try {
                for (int i = 1; i <= share; i++) {
                    held.add(new HostileReducer(node.clientProvider, node.service.address(), "app-" + i, node.start("app-" + i, "alice")));
                }
                String next = "app-" + (share + 1);
                byte[] nextSecret = node.start(next, "alice");
                IOException refused = assertThrows(IOException.class,
                        () -> new HostileReducer(node.clientProvider, node.service.address(), next, nextSecret).close());
                assertTrue(refused.getMessage().contains("applications of this application's user"), refused.getMessage());
                assertEquals(share, node.service.tenants());
                held.add(new HostileReducer(node.clientProvider, node.service.address(), "app-b", ServiceNode.SECRET_B));
                assertEquals(share + 1, node.service.tenants());

                held.removeFirst().close();
                node.stop("app-1");
                EngineTestSupport.eventually("app-1's tenant freed", () -> node.service.stopsUnderWay() == 0
                        && node.service.usage().countOfUser(ServiceUsage.Kind.TENANTS, "alice") == share - 1);
                held.add(new HostileReducer(node.clientProvider, node.service.address(), next, nextSecret));
            } finally {
                held.forEach(HostileReducer::close);
            }
        }
    }

    /**
     * Each tenant's send and receive pools are registered (pinned) for its whole life, 1.5 MiB here,
     * and sat outside the registered-memory budget: many applications pinned without bound what the
     * operator's limit was meant to cap. They count in the user's and the node's registered bytes
     * now: with a user's share of 4 MiB, the user's third application is refused for want of
     * registered memory, another user's is served, and a stopped one gives its bytes back.
     */
    @Test
    void aUsersApplicationsPoolsCountInItsShareOfRegisteredMemory() throws Exception {
        EngineConfig config = EngineTestSupport.smallConfig().set(EngineConfig.KEY_REGISTERED_MEMORY_LIMIT, "8m");
        long pools = (32L + 16) * config.receiveBufferSize(); // receive and send buffers of smallConfig
        try (ServiceNode node = new ServiceNode(config)) {
            List<HostileReducer> held = new ArrayList<>();
            try {
                for (String app : List.of("app-1", "app-2")) {
                    held.add(new HostileReducer(node.clientProvider, node.service.address(), app, node.start(app, "alice")));
                }
                assertEquals(2 * pools, node.service.registeredMemoryBudget().poolBytes());
                assertTrue(3 * pools > node.service.registeredMemoryBudget().userLimits().bytes(), "the test's premise");
                byte[] third = node.start("app-3", "alice");
                IOException refused = assertThrows(IOException.class,
                        () -> new HostileReducer(node.clientProvider, node.service.address(), "app-3", third).close());
                assertTrue(refused.getMessage().contains("registered memory is exhausted"), refused.getMessage());
                held.add(new HostileReducer(node.clientProvider, node.service.address(), "app-b", ServiceNode.SECRET_B));
                assertEquals(3 * pools, node.service.registeredMemoryBudget().poolBytes());

                held.removeFirst().close();
                node.stop("app-1");
                EngineTestSupport.eventually("app-1's pools given back",
                        () -> node.service.registeredMemoryBudget().poolBytes() == 2 * pools);
                held.add(new HostileReducer(node.clientProvider, node.service.address(), "app-3", third));
            } finally {
                held.forEach(HostileReducer::close);
            }
        }
    }

    /**
     * Memory windows were bounded per application only, and the device's {@code max_mw} is shared by
     * every application: many applications of one user could take all of them. A user's applications
     * hold at most twice {@code maxMemoryWindowsPerApplication}: with two each, the user's two
     * applications holding two windows each within the lease, its third is answered "busy" (its own
     * bound not reached), and another user's application reads through a window of its own.
     */
    @Test
    void oneUsersApplicationsHoldNoMoreMemoryWindowsThanTheUsersShare() throws Exception {
        EngineConfig config = EngineTestSupport.smallConfig().set(EngineConfig.KEY_MEMORY_WINDOWS, "true")
                .set(EngineConfig.KEY_MAX_MEMORY_WINDOWS_PER_APPLICATION, "2");
        try (ServiceNode node = new ServiceNode(config)) {
            assertTrue(node.service.windowUse().on(), node.service.windowUse().reason());
            List<String> apps = List.of("app-1", "app-2", "app-3", "app-b");
            List<HostileReducer> reducers = new ArrayList<>();
            try {
                for (String app : apps) {
                    byte[] secret = app.equals("app-b") ? ServiceNode.SECRET_B : node.start(app, "alice");
                    for (int m = 0; m < 2; m++) {
                        EngineTestSupport.MapOutput o = EngineTestSupport.writeMapOutput(
                                Files.createDirectories(dir.resolve(app)), 0, m, new int[] {500, 500}, m);
                        node.service.registerMapOutput(app, 0, m, o.file(), o.offsets());
                    }
                    HostileReducer r = new HostileReducer(node.clientProvider, node.service.address(), app, secret);
                    reducers.add(r);
                    r.postReceives();
                }
                for (int i = 0; i < 2; i++) { // alice's first two applications: two windows each, all within the lease
                    for (int m = 0; m < 2; m++) {
                        HostileReducer r = reducers.get(i);
                        assertEquals(WorkCompletionStatus.SUCCESS, r.read(r.describe(0, List.of(BlockId.of(0, m, 0))).getFirst()));
                    }
                }
                assertEquals(4, node.service.usage().countOfUser(ServiceUsage.Kind.WINDOWS, "alice"));
                Message refused = reducers.get(2).ask(new Message.FetchRequest(9, 0, List.of(BlockId.of(0, 0, 0))));
                assertTrue(busy(refused), String.valueOf(refused));
                // Its own bound is not reached (two): its user's is.
                assertEquals(0, node.service.usage().count(ServiceUsage.Kind.WINDOWS, "app-3"), "nothing allocated for it");
                assertEquals(4, node.service.usage().countOfUser(ServiceUsage.Kind.WINDOWS, "alice"));
                HostileReducer bob = reducers.get(3);
                assertEquals(WorkCompletionStatus.SUCCESS, bob.read(bob.describe(0, List.of(BlockId.of(0, 0, 0))).getFirst()));
            } finally {
                reducers.forEach(HostileReducer::close);
            }
            EngineTestSupport.eventually("every window given back with its connection",
                    () -> node.service.usage().count(ServiceUsage.Kind.WINDOWS) == 0);
        }
    }

    /**
     * The application stops while a CONNECT of its is past the tenant lookup, setting up its queue
     * pair: the stop retired a snapshot of the tenant's connections, then the CONNECT added its QP,
     * and ibv_destroy_srq failed (EBUSY) with the QP on the SRQ; the close threw before freeing the
     * rest, and the PD, pools, windows and registry stayed. Now the tenant is closed to set-ups first
     * (the one under way waited for), then its connections retired, then the rest freed.
     */
    @Test
    void aStopRacingAConnectLeavesNothingOfTheTenant() throws Exception {
        try (ServiceNode node = new ServiceNode()) {
            CountDownLatch inSetUp = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            node.service.duringServingSetUps(() -> {
                inSetUp.countDown();
                try {
                    release.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            // Its session's close (with the stop) would retire the connection too: it waits, so the stop meets the QP alone.
            node.service.afterServingSetUps(() -> {
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            Thread connecting = Thread.ofPlatform().name("racing-connect").start(() -> {
                try {
                    new HostileReducer(node.clientProvider, node.service.address(), "app-a", ServiceNode.SECRET_A).close();
                } catch (IOException | RuntimeException expected) {
                    // its session closes with the stop: the CONNECT may or may not be answered
                }
            });
            try {
                assertTrue(inSetUp.await(30, TimeUnit.SECONDS), "the CONNECT never reached its set-up");
                assertEquals(1, node.service.usage().count(ServiceUsage.Kind.TENANTS, "app-a"));
                node.stop("app-a");
                Thread.sleep(300); // the stopper is on the tenant now, waiting for the set-up
                assertEquals(1, node.service.stopsUnderWay());
            } finally {
                release.countDown();
            }
            connecting.join(30_000);
            EngineTestSupport.eventually("the stop freed the tenant: " + node.service.counters(),
                    () -> node.service.stopsUnderWay() == 0);
            assertEquals(0, node.service.usage().count(ServiceUsage.Kind.TENANTS, "app-a"), "the tenant's resources were left");
            assertEquals(0, node.service.counters().servingConnections());
            assertEquals(0, node.service.registeredMemoryBudget().poolBytes(), "its pools stayed registered");
        }
    }

    /**
     * Requests were counted in blocks: a flood of one-block requests waiting for a registration held
     * some 0.5 KB each, and a timer task each for its timeout that nobody cancelled, 131,072 per
     * application. Waiting requests are counted in number (4,096 per application) and in bytes; each
     * has one task on the engine's timer while it waits, cancelled when its wait ends: with a minute's
     * lookup timeout, the timer is back to its own ticks as soon as the registration is done.
     */
    @Test
    void aFloodOfRequestsWaitingForARegistrationIsBoundedInNumber_andLeavesNoTimerTaskBehind() throws Exception {
        // Three server threads: the user may hold two, one stuck registering, the other taking the flood.
        EngineConfig config = EngineTestSupport.smallConfig().set(EngineConfig.KEY_LOOKUP_TIMEOUT, "60s")
                .set(EngineConfig.KEY_SERVER_THREADS, "3");
        int bound = org.rdmashuffle.core.server.ServiceLimits.REQUESTS_PER_APPLICATION;
        // Fewer refusals than a connection may have answers waiting for send slots (256): more, sent
        // faster than its slots come back, and the connection is cut off as a peer that takes none.
        int flood = bound + 200;
        CountDownLatch release = new CountDownLatch(1);
        try (ServiceNode node = new ServiceNode(config)) {
            EngineTestSupport.MapOutput a = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("a")), 0, 3,
                    new int[] {100, 100}, 3);
            node.service.registerMapOutput("app-a", 0, 3, a.file(), a.offsets());
            node.service.tenantOf("app-a").registry().beforeRegistering(EngineTestSupport.heldUntil(release));
            int before = node.service.timerTasks();
            try (HostileReducer r = new HostileReducer(node.clientProvider, node.service.address(), "app-a", ServiceNode.SECRET_A)) {
                int refused = r.flood(flood, k -> new Message.FetchRequest(k + 1, 0, List.of(BlockId.of(0, 3, 0))),
                        SharedUserBoundsTest::busy);
                refused += r.takeAnswers(Duration.ofSeconds(1), SharedUserBoundsTest::busy);
                try {
                    assertEquals(flood - bound, refused, "requests refused beyond the application's bound");
                    assertEquals(bound, node.service.usage().count(ServiceUsage.Kind.REQUESTS, "app-a"));
                    int waiting = node.service.timerTasks() - before;
                    // One is registering (its thread waits, not the timer); each other one has its timeout on the engine's timer.
                    assertTrue(waiting >= bound - 8 && waiting <= bound + 8, waiting + " timer tasks for " + bound
                            + " waiting requests");
                } finally {
                    release.countDown();
                }
                r.takeAnswers(Duration.ofSeconds(1), m -> true);
                EngineTestSupport.eventually("every waiting request ended and its timer task went with it: "
                                + node.service.timerTasks() + " tasks",
                        () -> node.service.usage().count(ServiceUsage.Kind.REQUESTS) == 0
                                && node.service.timerTasks() <= before + 2);
            } finally {
                release.countDown();
            }
        }
    }

    /** A control connection shows the user's bound holds across stops too: a stopped application's are closed and counted out. */
    @Test
    void aStoppedApplicationsControlConnectionsAreCountedOutOfItsUser() throws Exception {
        EngineConfig config = EngineTestSupport.smallConfig().set(EngineConfig.KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION, "1")
                .set(EngineConfig.KEY_MAX_SERVED_CONNECTIONS_PER_USER, "1");
        try (ServiceNode node = new ServiceNode(config)) {
            byte[] first = node.start("app-1", "alice");
            try (ControlClient c = ControlClient.connect(node.service.address(), first, "app-1", 64 << 10, CALL)) {
                byte[] second = node.start("app-2", "alice");
                IOException busy = assertThrows(IOException.class,
                        () -> ControlClient.connect(node.service.address(), second, "app-2", 64 << 10, CALL).close());
                assertTrue(busy.getMessage().contains("busy"), busy.getMessage());
                node.stop("app-1");
                EngineTestSupport.eventually("app-1's control connection counted out of alice",
                        () -> node.service.usage().countOfUser(ServiceUsage.Kind.CONTROL, "alice") == 0);
                ControlClient.connect(node.service.address(), second, "app-2", 64 << 10, CALL).close();
            }
        }
    }
}
