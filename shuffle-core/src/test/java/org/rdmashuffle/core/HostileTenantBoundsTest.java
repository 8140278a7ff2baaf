package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.control.ControlClient;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.protocol.ConnectCodec;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.server.MapOutputRegistry;
import org.rdmashuffle.core.server.files.OutputFile;
import org.rdmashuffle.verbs.software.SoftwareProvider;

/**
 * The shared service against an authenticated tenant, round two: every resource one application can
 * make a node's service hold is bounded in number, in bytes and in time (docs/security.md's table).
 * One test per attack, named after it, written from the attacker's side; each checks the attacker is
 * cut off at the bound and that the other application (or the attacker's own honest reducers, where
 * the harm was to its own application) is still served.
 */
@ExtendWith(NoThreadOutlivesTheTest.class)
class HostileTenantBoundsTest {
    private static final byte[] SECRET_A = ServiceNode.SECRET_A;
    private static final byte[] SECRET_B = ServiceNode.SECRET_B;
    private static final Duration CALL = Duration.ofSeconds(10);

    @TempDir
    Path dir;

    private static void fetchIntact(RdmaShuffleEngine reducer, RdmaShuffleEngine service, EngineTestSupport.MapOutput out)
            throws Exception {
        List<BlockId> blocks = EngineTestSupport.everyPartition(List.of(out));
        Collector c = new Collector(blocks.size());
        reducer.fetchBlocks(service.address(), blocks, c);
        c.await().assertAllIntact(EngineTestSupport.expected(List.of(out), blocks));
    }

    /**
     * A reducer joins its serving queue pair, asks, and never acknowledges an answer (its process
     * stopped, or it does so on purpose): its application's send slots stay in flight. The send
     * deadline fails its connection, the slots come back when its queue pairs are destroyed, and
     * another reducer of the same application is served.
     */
    @Test
    @Tag(EngineTestSupport.SOFTWARE_PROVIDER_ONLY)
    void aReducerThatNeverAcknowledgesItsAnswersIsCutOff_andItsApplicationsOtherReducersAreServed() throws Exception {
        Assumptions.assumeFalse(EngineTestSupport.usesDevice(), "a silent peer is made by stopping a software device's reads");
        EngineConfig config = EngineTestSupport.smallConfig().set(EngineConfig.KEY_SEND_BUFFERS, "4")
                .set(EngineConfig.KEY_CONNECT_TIMEOUT, "2s");
        try (ServiceNode node = new ServiceNode(config);
             SoftwareProvider attackers = new SoftwareProvider(SoftwareProvider.Config.loopback())) {
            EngineTestSupport.MapOutput a = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("a")), 0, 3, 8,
                    EngineTestSupport.size(5000), 3);
            node.service.registerMapOutput("app-a", 0, 3, a.file(), a.offsets());
            try (HostileReducer silent = new HostileReducer(attackers, node.service.address(), "app-a", SECRET_A)) {
                silent.postReceives();
                silent.describe(0, List.of(BlockId.of(0, 3, 0))); // registered now: its answers come from the poller
                attackers.stopReadingForTests();
                // Its send queue's worth of requests, whose answers it never acknowledges: the 4 send slots fill.
                for (int i = 0; i < 16; i++) {
                    long id = 10 + i;
                    silent.sendRaw(slot -> new org.rdmashuffle.core.protocol.MessageCodec(HostileReducer.BUFFER)
                            .encode(new Message.FetchRequest(id, 0, List.of(BlockId.of(0, 3, 1))), slot));
                }
                EngineTestSupport.eventually("the silent reducer holds the send slots",
                        () -> node.service.counters().sendsInFlight() >= 4);
                RdmaShuffleEngine honest = node.reducer("app-a", SECRET_A);
                fetchIntact(honest, node.service, a);
                EngineTestSupport.eventually("the silent reducer's connection retired: " + node.service.counters(),
                        () -> node.service.counters().servingConnections() == 1);
            }
        }
    }

    /**
     * One reducer of the application stopped reading, so its answers hold every send slot of the
     * application (until the send deadline); another asks a thousand times meanwhile: its answers wait
     * for slots. At most {@code MAX_QUEUED_PER_CONNECTION} (256) wait for one connection; beyond that it
     * is cut off and its answers dropped. Another application is served.
     */
    @Test
    @Tag(EngineTestSupport.SOFTWARE_PROVIDER_ONLY)
    void aReducerThatAsksAndNeverTakesItsAnswers_queuesNoMoreThanTheBound() throws Exception {
        Assumptions.assumeFalse(EngineTestSupport.usesDevice(), "a silent peer is made by stopping a software device's reads");
        try (ServiceNode node = new ServiceNode();
             SoftwareProvider frozen = new SoftwareProvider(SoftwareProvider.Config.loopback())) {
            EngineTestSupport.MapOutput a = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("a")), 0, 3,
                    new int[] {3000, 3000}, 3);
            node.service.registerMapOutput("app-a", 0, 3, a.file(), a.offsets());
            try (HostileReducer holder = new HostileReducer(frozen, node.service.address(), "app-a", SECRET_A);
                 HostileReducer greedy = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A,
                         1024)) {
                holder.postReceives();
                holder.describe(0, List.of(BlockId.of(0, 3, 0))); // registered: from now on every answer comes from the poller
                frozen.stopReadingForTests();
                holder.sendWithoutWaiting(16, new Message.FetchRequest(7, 0, List.of(BlockId.of(0, 3, 1))));
                EngineTestSupport.eventually("the frozen reducer holds the send slots",
                        () -> node.service.counters().sendsInFlight() >= 16);
                greedy.sendWithoutWaiting(1000, new Message.FetchRequest(7, 0, List.of(BlockId.of(0, 3, 1))));
                EngineTestSupport.eventually("both reducers' connections retired",
                        () -> node.service.counters().servingConnections() == 0);
                int bound = 256; // MetadataSender.MAX_QUEUED_PER_CONNECTION
                assertTrue(node.service.peakQueuedSends() <= bound, "answers waiting at once: " + node.service.peakQueuedSends());
            }
            EngineTestSupport.MapOutput b = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("b")), 0, 4, 2,
                    EngineTestSupport.size(3000), 4);
            node.service.registerMapOutput("app-b", 0, 4, b.file(), b.offsets());
            fetchIntact(node.reducer("app-b", SECRET_B), node.service, b);
        }
    }

    /**
     * The application's answers wait for its send slots (one reducer stopped reading, holding all
     * sixteen); five other reducers of it ask, each fewer times than one connection may have waiting
     * (256), together more than the application may (1,024). At the application's bound the
     * connection with the most answers waiting is closed and its answers dropped — the first one here,
     * 250 waiting, not the one whose answer met the bound — and the others stay, their answers waiting.
     */
    @Test
    @Tag(EngineTestSupport.SOFTWARE_PROVIDER_ONLY)
    void answersOverTheApplicationsQueueBound_closeTheConnectionWithTheMostWaiting_andOnlyIt() throws Exception {
        Assumptions.assumeFalse(EngineTestSupport.usesDevice(), "a silent peer is made by stopping a software device's reads");
        // A send deadline long enough for the queues to fill before the silent reducer's slots come back.
        EngineConfig config = EngineTestSupport.smallConfig().set(EngineConfig.KEY_CONNECT_TIMEOUT, "60s");
        try (ServiceNode node = new ServiceNode(config);
             SoftwareProvider frozen = new SoftwareProvider(SoftwareProvider.Config.loopback())) {
            EngineTestSupport.MapOutput a = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("a")), 0, 3,
                    new int[] {3000, 3000}, 3);
            node.service.registerMapOutput("app-a", 0, 3, a.file(), a.offsets());
            List<HostileReducer> askers = new ArrayList<>();
            try (HostileReducer holder = new HostileReducer(frozen, node.service.address(), "app-a", SECRET_A)) {
                holder.postReceives();
                holder.describe(0, List.of(BlockId.of(0, 3, 0))); // registered: from now on every answer comes from the poller
                frozen.stopReadingForTests();
                holder.sendWithoutWaiting(16, new Message.FetchRequest(7, 0, List.of(BlockId.of(0, 3, 1))));
                EngineTestSupport.eventually("the frozen reducer holds the send slots",
                        () -> node.service.counters().sendsInFlight() >= 16);
                int[] asks = {250, 200, 200, 200, 200}; // 1,050 in all: the last meets the bound at its 174th
                int waiting = 16;
                for (int i = 0; i < asks.length; i++) {
                    HostileReducer r = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A, 256);
                    askers.add(r);
                    r.sendWithoutWaiting(asks[i], new Message.FetchRequest(8, 0, List.of(BlockId.of(0, 3, 1))));
                    if (i < asks.length - 1) {
                        int expected = waiting += asks[i];
                        EngineTestSupport.eventually("asker " + i + "'s answers wait",
                                () -> node.service.counters().sendsInFlight() == expected);
                    }
                }
                int largest = askers.getFirst().serverQpNumber();
                java.util.Set<org.rdmashuffle.core.transport.DataConnection> live = node.service.tenantOf("app-a").domain().connections();
                EngineTestSupport.eventually("the connection with the most waiting closed",
                        () -> live.stream().noneMatch(c -> c.qpNumber(0) == largest));
                EngineTestSupport.eventually("the last asker's answers all wait", () -> node.service.counters().sendsInFlight()
                        == 16 + 1050 - 250);
                for (HostileReducer r : askers.subList(1, askers.size())) {
                    assertTrue(live.stream().anyMatch(c -> c.qpNumber(0) == r.serverQpNumber()), "a smaller queue's connection closed");
                }
                assertTrue(node.service.peakQueuedSends() <= 1024, "answers waiting at once: " + node.service.peakQueuedSends());
            } finally {
                askers.forEach(HostileReducer::close);
            }
        }
    }

    /**
     * Malformed messages, one after another and no receive posted (so the service's error cannot land
     * and close the connection at once): the first schedules the connection's close; the others cost
     * nothing, not a timer task each.
     */
    @Test
    void aFloodOfMalformedMessagesCostsOneClose() throws Exception {
        try (ServiceNode node = new ServiceNode();
             HostileReducer garbage = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A)) {
            int sent = garbage.sendPaced(300, (k, slot) -> {
                slot.asSlice(0, 64).fill((byte) (0x5A + k));
                return 64;
            });
            // On a device the service's error, which cannot land, fails after its RNR retries (about a second):
            // an emulated guest sends fewer in that time than the host. More than a send queue's worth is an attack.
            assertTrue(sent > 16, "the flood was cut off before it got going: " + sent);
            assertTrue(node.service.timerTasks() <= 4, node.service.timerTasks() + " timer tasks after " + sent
                    + " malformed messages");
            EngineTestSupport.eventually("the connection retired", () -> node.service.counters().servingConnections() == 0);
        }
    }

    /**
     * The tenant hard-links one one-byte file as 60 outputs: counted in bytes they are nothing, but
     * each registered is a mapping, a region-table entry and (with sendfile) a descriptor. An
     * application registers at most its share of regions; another application still registers its own.
     */
    @Test
    void outputsHardLinkedToOneByteRegisterNoMoreRegionsThanTheBound() throws Exception {
        // A held answer's request waits for a release this reducer never sends: at most the lookup timeout.
        EngineConfig config = EngineTestSupport.smallConfig().set(EngineConfig.KEY_MAX_REGISTERED_REGIONS, "16")
                .set(EngineConfig.KEY_LOOKUP_TIMEOUT, "100ms");
        try (ServiceNode node = new ServiceNode(config)) {
            Path aDir = Files.createDirectories(dir.resolve("a"));
            Path one = Files.write(aDir.resolve("one.data"), new byte[] {7});
            List<Path> links = new ArrayList<>();
            for (int m = 0; m < 60; m++) {
                links.add(Files.createLink(aDir.resolve("shuffle_0_" + m + "_0.data"), one));
            }
            node.service.resolver((app, shuffle, map) -> app.equals("app-a") && map >= 0 && map < links.size()
                    ? new MapOutputRegistry.ResolvedOutput(OutputFile.trusted(links.get((int) map)), new long[] {0, 1}, null)
                    : null);
            try (HostileReducer hoarder = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A)) {
                hoarder.postReceives();
                int refused = 0;
                for (int m = 0; m < 60; m++) { // each described and held, never released: none may be deregistered
                    Message answer = hoarder.ask(new Message.FetchRequest(m + 1, 0, List.of(BlockId.of(0, m, 0))));
                    refused += answer instanceof Message.ErrorResponse e && e.reason().contains("registered memory") ? 1 : 0;
                }
                int perApplication = 16 / 4;
                assertEquals(60 - perApplication, refused, "outputs refused beyond the application's share of regions");
                assertEquals(perApplication, node.service.tenantOf("app-a").registry().registeredRegions());
                EngineTestSupport.MapOutput b = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("b")), 0, 4,
                        2, EngineTestSupport.size(3000), 4);
                node.service.registerMapOutput("app-b", 0, 4, b.file(), b.offsets());
                fetchIntact(node.reducer("app-b", SECRET_B), node.service, b);
            }
        }
    }

    /**
     * The tenant's index of 50,000 partitions (400 KB of offsets held in the heap for each output
     * found), hard-linked as 12 outputs: an application holds at most its share of index heap (a
     * quarter of 2 MiB here); what does not fit is refused, not held.
     */
    @Test
    void oneHugeIndexHardLinkedManyTimesHoldsNoMoreHeapThanTheBound() throws Exception {
        EngineConfig config = EngineTestSupport.smallConfig().set(EngineConfig.KEY_MAX_INDEX_MEMORY, "2m");
        int partitions = 50_000;
        long[] offsets = new long[partitions + 1];
        for (int p = 1; p <= partitions; p++) {
            offsets[p] = p;
        }
        try (ServiceNode node = new ServiceNode(config)) {
            Path aDir = Files.createDirectories(dir.resolve("a"));
            Path data = Files.write(aDir.resolve("big.data"), new byte[partitions]);
            List<Path> links = new ArrayList<>();
            for (int m = 0; m < 12; m++) {
                links.add(Files.createLink(aDir.resolve("shuffle_0_" + m + "_0.data"), data));
            }
            node.service.resolver((app, shuffle, map) -> app.equals("app-a") && map >= 0 && map < links.size()
                    ? new MapOutputRegistry.ResolvedOutput(OutputFile.trusted(links.get((int) map)), offsets, null) : null);
            try (HostileReducer hoarder = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A)) {
                hoarder.postReceives();
                int refused = 0;
                for (int m = 0; m < 12; m++) {
                    Message answer = hoarder.ask(new Message.FetchRequest(m + 1, 0, List.of(BlockId.of(0, m, 0)), false));
                    refused += answer instanceof Message.ErrorResponse ? 1 : 0;
                }
                MapOutputRegistry registry = node.service.tenantOf("app-a").registry();
                long share = (2L << 20) / 4;
                assertTrue(registry.indexBytes() <= share, registry.indexBytes() + " bytes of index held, share " + share);
                assertTrue(registry.mapOutputs() <= 1, registry.mapOutputs() + " outputs of 400 KB indexes held");
                assertTrue(refused >= 11, refused + " refused");
            }
        }
    }

    /**
     * MapReduce's index records each partition's raw size, and a block's raw size was their sum: an
     * index of 349,000 partitions and requests of thousands of blocks each spanning all of them made
     * one message cost the shared completion poller some 10^9 additions. Now a block costs a constant:
     * another application's fetch, behind forty such requests, is answered within 4 s.
     */
    @Test
    @Tag(EngineTestSupport.TIMING)
    void requestsForEveryPartitionOfAHugeIndexCostThePollerWhatTheirBytesCost() throws Exception {
        Assumptions.assumeFalse(EngineTestSupport.usesDevice(),
                "a timing comparison: runs on the software provider, not in the emulated Soft-RoCE guest");
        int partitions = 349_000;
        long[] offsets = new long[partitions + 1];
        long[] raw = new long[partitions];
        offsets[partitions] = 4096; // every partition empty but the last
        java.util.Arrays.fill(raw, 3);
        try (ServiceNode node = new ServiceNode()) {
            Path data = Files.write(Files.createDirectories(dir.resolve("a")).resolve("file.out"), new byte[4096]);
            node.service.resolver((app, shuffle, map) -> app.equals("app-a") && map == 1
                    ? new MapOutputRegistry.ResolvedOutput(OutputFile.trusted(data), offsets, raw) : null);
            EngineTestSupport.MapOutput b = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("b")), 0, 6, 4,
                    EngineTestSupport.size(5000), 6);
            node.service.registerMapOutput("app-b", 0, 6, b.file(), b.offsets());
            RdmaShuffleEngine victim = node.reducer("app-b", SECRET_B);
            fetchIntact(victim, node.service, b); // registered: from now on answered on the poller
            try (HostileReducer heavy = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A)) {
                heavy.postReceives();
                heavy.describe(0, List.of(new BlockId(0, 1, 0, partitions))); // found and registered: the poller answers the rest
                List<BlockId> all = new ArrayList<>();
                for (int i = 0; i < 4000; i++) {
                    all.add(new BlockId(0, 1, 0, partitions));
                }
                heavy.flood(40, k -> new Message.FetchRequest(k + 2, 0, all, false));
                long start = System.nanoTime();
                List<BlockId> blocks = EngineTestSupport.everyPartition(List.of(b));
                Collector c = new Collector(blocks.size());
                victim.fetchBlocks(node.service.address(), blocks, c);
                assertTrue(c.answeredWithin(Duration.ofSeconds(4)), "the poller was busy summing one tenant's index");
                c.assertAllIntact(EngineTestSupport.expected(List.of(b), blocks));
                assertTrue(System.nanoTime() - start < 4_000_000_000L);
            }
        }
    }

    /**
     * A registration that never ends (a huge file, a slow disk): a second request for the same output
     * waited for it without a timeout, holding a server thread for ever. Now it is refused after the
     * lookup timeout, without holding a thread, and another application is served meanwhile (a user's
     * requests hold at most all server threads but one).
     */
    @Test
    void aRegistrationThatNeverEndsIsWaitedForAtMostTheLookupTimeout() throws Exception {
        // Three server threads: a user may hold two (one is always left to the others), so the second request runs.
        EngineConfig config = EngineTestSupport.smallConfig().set(EngineConfig.KEY_LOOKUP_TIMEOUT, "1s")
                .set(EngineConfig.KEY_SERVER_THREADS, "3");
        CountDownLatch release = new CountDownLatch(1);
        try (ServiceNode node = new ServiceNode(config)) {
            EngineTestSupport.MapOutput a = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("a")), 0, 3,
                    new int[] {4000, 4000}, 3);
            node.service.registerMapOutput("app-a", 0, 3, a.file(), a.offsets());
            node.service.tenantOf("app-a").registry().beforeRegistering(EngineTestSupport.heldUntil(release));
            try (HostileReducer first = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A);
                 HostileReducer second = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A)) {
                first.postReceives();
                second.postReceives();
                first.sendRaw(slot -> new org.rdmashuffle.core.protocol.MessageCodec(HostileReducer.BUFFER)
                        .encode(new Message.FetchRequest(1, 0, List.of(BlockId.of(0, 3, 0))), slot)); // registers, for ever
                Thread.sleep(200);
                Message refused = second.ask(new Message.FetchRequest(1, 0, List.of(BlockId.of(0, 3, 1))));
                assertTrue(refused instanceof Message.ErrorResponse e && e.reason().contains("not found or registered in time"),
                        String.valueOf(refused));
                EngineTestSupport.MapOutput b = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("b")), 0, 4,
                        2, EngineTestSupport.size(3000), 4);
                node.service.registerMapOutput("app-b", 0, 4, b.file(), b.offsets());
                fetchIntact(node.reducer("app-b", SECRET_B), node.service, b);
            } finally {
                release.countDown();
            }
        }
    }

    /** Authenticated control connections once left the handshake's count: each is now one of the application's connections. */
    @Test
    void anApplicationCannotHoldUnlimitedAuthenticatedControlConnections() throws Exception {
        EngineConfig config = EngineTestSupport.smallConfig().set(EngineConfig.KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION, "3");
        try (ServiceNode node = new ServiceNode(config)) {
            List<ControlClient> held = new ArrayList<>();
            try {
                for (int i = 0; i < 3; i++) {
                    held.add(ControlClient.connect(node.service.address(), SECRET_A, "app-a", 64 << 10, CALL));
                }
                IOException fourth = assertThrows(IOException.class,
                        () -> ControlClient.connect(node.service.address(), SECRET_A, "app-a", 64 << 10, CALL).close());
                assertTrue(fourth.getMessage().contains("busy"), fourth.getMessage());
                ControlClient.connect(node.service.address(), SECRET_B, "app-b", 64 << 10, CALL).close();
                held.removeFirst().close();
                EngineTestSupport.eventually("a closed connection gives its place back", () -> {
                    try {
                        held.add(ControlClient.connect(node.service.address(), SECRET_A, "app-a", 64 << 10, CALL));
                        return true;
                    } catch (IOException busy) {
                        return false;
                    }
                });
            } finally {
                held.forEach(ControlClient::close);
            }
        }
    }

    /**
     * A control connection that holds nothing stays open only while its requests are answered: a peer
     * asking again and again to be refused (here: malformed CONNECTs) is closed after the idle timeout.
     */
    @Test
    void refusedRequestsDoNotKeepAnIdleControlConnectionOpen() throws Exception {
        EngineConfig config = EngineTestSupport.smallConfig().set(EngineConfig.KEY_FETCH_TIMEOUT, "1s"); // idle: 2 s
        try (ServiceNode node = new ServiceNode(config);
             ControlClient pest = ControlClient.connect(node.service.address(), SECRET_A, "app-a", 64 << 10, CALL)) {
            long deadline = System.nanoTime() + 10_000_000_000L;
            int refused = 0;
            while (pest.isOpen() && System.nanoTime() < deadline) {
                try {
                    pest.call(ConnectCodec.CONNECT, new byte[] {1, 2, 3}, CALL);
                } catch (IOException e) {
                    refused++;
                }
                Thread.sleep(300);
            }
            assertFalse(pest.isOpen(), "a connection kept open by " + refused + " refused requests");
        }
    }

    /**
     * The application stops while a reducer of it still has an authenticated control connection; a
     * CONNECT on it then built a fresh tenant (PD, SRQ, pinned pools) that nothing ever removed. Its
     * control connections close with the stop, a new one is refused, and no tenant comes back.
     */
    @Test
    void aControlSessionOutlivingItsApplicationsStopCannotRecreateItsTenant() throws Exception {
        try (ServiceNode node = new ServiceNode();
             ControlClient lingering = ControlClient.connect(node.service.address(), SECRET_A, "app-a", 64 << 10, CALL);
             HostileReducer probe = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A)) {
            assertEquals(1, node.service.tenants());
            node.service.unregisterApplication("app-a");
            EngineTestSupport.eventually("the stop is done", () -> node.service.stopsUnderWay() == 0);
            byte[] connect = ConnectCodec.encode(new ConnectCodec.Connect(4096,
                    List.of(HostileTenantTest.softwareEndpoint(java.net.InetAddress.getLoopbackAddress(), 1))));
            assertThrows(IOException.class, () -> lingering.call(ConnectCodec.CONNECT, connect, CALL));
            RuntimeException again = assertThrows(org.rdmashuffle.core.control.AuthenticationException.class,
                    () -> ControlClient.connect(node.service.address(), SECRET_A, "app-a", 64 << 10, CALL).close());
            assertTrue(again.getMessage().contains("has stopped"), again.getMessage());
            assertEquals(0, node.service.tenants(), "a stopped application's tenant came back");
            EngineTestSupport.eventually("its connections ended", () -> node.service.counters().servingConnections() == 0);
        }
    }

    /**
     * YARN's dispatcher stops an application while a file of its is being registered (ibv_reg_mr of a
     * big file, on a slow disk): the stop used to wait for it under the engine's global lock. It
     * returns at once now; the application's resources are freed once the registration ends.
     */
    @Test
    void stoppingAnApplicationReturnsAtOnceWhileItsFileIsBeingRegistered() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        try (ServiceNode node = new ServiceNode()) {
            EngineTestSupport.MapOutput a = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("a")), 0, 3, 2,
                    EngineTestSupport.size(5000), 3);
            node.service.registerMapOutput("app-a", 0, 3, a.file(), a.offsets());
            CountDownLatch registering = new CountDownLatch(1);
            node.service.tenantOf("app-a").registry().beforeRegistering(() -> {
                registering.countDown();
                try {
                    release.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            try (HostileReducer reducer = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A)) {
                reducer.postReceives();
                reducer.sendRaw(slot -> new org.rdmashuffle.core.protocol.MessageCodec(HostileReducer.BUFFER)
                        .encode(new Message.FetchRequest(1, 0, List.of(BlockId.of(0, 3, 0))), slot));
                assertTrue(registering.await(30, TimeUnit.SECONDS), "the registration never started");
                Thread.ofVirtual().start(() -> {
                    try {
                        Thread.sleep(5000);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    release.countDown();
                });
                long start = System.nanoTime();
                assertEquals(1, node.service.unregisterApplication("app-a"));
                long took = System.nanoTime() - start;
                assertTrue(took < 2_000_000_000L, "the stop waited " + took / 1_000_000 + " ms for a registration");
                assertEquals(0, node.service.tenants());
            } finally {
                release.countDown();
            }
            EngineTestSupport.eventually("the application's resources are freed", () -> node.service.stopsUnderWay() == 0
                    && node.service.counters().registeredMapOutputBytes() == 0
                    && node.service.counters().servingConnections() == 0);
        }
    }

    /**
     * The reducer trusts a description (a layout) for half the service's lease, told at connection,
     * not for half of its own fetch timeout: a service with a 2 s lease may release a region 2 s after
     * describing it, however long the reducer would wait. After 1.5 s the reducer asks again.
     */
    @Test
    void aReducerTrustsADescriptionForHalfTheServicesLeaseNotItsOwnTimeout() throws Exception {
        EngineConfig service = EngineTestSupport.smallConfig().set(EngineConfig.KEY_FETCH_TIMEOUT, "2s");
        try (ServiceNode node = new ServiceNode(service)) {
            EngineTestSupport.MapOutput b = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("b")), 0, 4, 4,
                    EngineTestSupport.size(3000), 4);
            node.service.registerMapOutput("app-b", 0, 4, b.file(), b.offsets());
            RdmaShuffleEngine reducer = node.reducer("app-b", SECRET_B,
                    EngineTestSupport.smallConfig().set(EngineConfig.KEY_FETCH_TIMEOUT, "60s"));
            java.util.concurrent.atomic.AtomicInteger requests = new java.util.concurrent.atomic.AtomicInteger();
            reducer.tamper(new RdmaShuffleEngine.Tamper() {
                @Override
                public Message message(org.rdmashuffle.core.transport.DataConnection.Role role, Message m) {
                    if (m instanceof Message.FetchRequest) {
                        requests.incrementAndGet();
                    }
                    return m;
                }
            });
            fetchOne(reducer, node.service, b, 0); // described, with the output's layout
            fetchOne(reducer, node.service, b, 1);
            assertEquals(1, requests.get(), "within half the lease the layout serves the next block");
            Thread.sleep(1500);
            fetchOne(reducer, node.service, b, 2);
            assertEquals(2, requests.get(), "past half the service's lease the reducer asks again");
        }
    }

    private static void fetchOne(RdmaShuffleEngine reducer, RdmaShuffleEngine service, EngineTestSupport.MapOutput out, int p)
            throws Exception {
        BlockId block = new BlockId(0, out.mapId(), p, p + 1);
        Collector c = new Collector(1);
        reducer.fetchBlocks(service.address(), List.of(block), c);
        c.await().assertAllIntact(EngineTestSupport.expected(List.of(out), List.of(block)));
    }
}
