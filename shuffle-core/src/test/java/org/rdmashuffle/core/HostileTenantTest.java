package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.client.BlockFetchException;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.protocol.BlockDescriptor;
import org.rdmashuffle.core.server.MapOutputRegistry;
import org.rdmashuffle.core.server.files.Confinement;
import org.rdmashuffle.verbs.WorkCompletionStatus;

/**
 * A node's shuffle service against an authenticated tenant that misbehaves: one test per attack,
 * named after it, written from the attacker's side ({@link HostileReducer} or a job's own files).
 * Each checks the attack is refused, the well-behaved application is still served, and nothing leaks.
 */
@org.junit.jupiter.api.extension.ExtendWith(NoThreadOutlivesTheTest.class)
class HostileTenantTest {
    private static final byte[] SECRET_A = ServiceNode.SECRET_A;
    private static final byte[] SECRET_B = ServiceNode.SECRET_B;

    @TempDir
    Path dir;
    /** A software-provider queue-pair endpoint naming {@code host:port} as its data listener (and any token). */
    static org.rdmashuffle.verbs.QueuePairEndpoint softwareEndpoint(java.net.InetAddress host, int port) {
        return new org.rdmashuffle.verbs.QueuePairEndpoint(9, 0,
                org.rdmashuffle.verbs.Gid.ipv4Mapped((java.net.Inet4Address) host), port, org.rdmashuffle.verbs.Mtu.MTU_1024,
                "token");
    }

    @Test
    void aReducerOfOneApplicationCannotReadAnothersRegion() throws Exception {
        try (ServiceNode node = new ServiceNode()) {
            EngineTestSupport.MapOutput b = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("b")), 0, 8, 4,
                    EngineTestSupport.size(20_000), 2);
            node.service.registerMapOutput("app-b", 0, 8, b.file(), b.offsets());
            BlockId whole = new BlockId(0, 8, 0, 4);
            try (HostileReducer victim = new HostileReducer(node.clientProvider, node.service.address(), "app-b", SECRET_B);
                 HostileReducer attacker = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A)) {
                victim.postReceives();
                // A real descriptor, taken from application b's own session: the rkey and address are live.
                BlockDescriptor stolen = victim.describe(0, List.of(whole)).getFirst();
                assertEquals(WorkCompletionStatus.SUCCESS, victim.read(stolen));
                assertArrayEquals(b.bytes(whole), victim.landed((int) stolen.length()), "the descriptor is genuine");

                WorkCompletionStatus attack = attacker.read(stolen);
                assertNotEquals(WorkCompletionStatus.SUCCESS, attack, "application a read application b's region");
                assertEquals(WorkCompletionStatus.REM_ACCESS_ERR, attack, "the device's PD check refuses it");
                assertFalse(java.util.Arrays.equals(b.bytes(whole), attacker.landed((int) stolen.length())),
                        "b's bytes reached a");

                // Application b is still served on its own queue pair.
                assertEquals(WorkCompletionStatus.SUCCESS, victim.read(stolen));
                assertEquals(2, node.service.tenants(), "one protection domain per application");
            }
            assertEquals(1, node.service.unregisterApplication("app-b"));
            EngineTestSupport.eventually("connections retired", () -> node.service.counters().servingConnections() == 0);
        }
    }

    /**
     * With reads through memory windows, a descriptor handed to one reducer connection is refused on
     * another connection of the same application (the PD check alone lets it through: the same
     * replay without windows is served, which the test shows too); the descriptor's own connection
     * is still served.
     */
    @Test
    void aDescriptorReplayedOnAnotherConnectionOfTheSameApplicationIsRefused() throws Exception {
        for (boolean windows : new boolean[] {true, false}) {
            EngineConfig config = EngineTestSupport.smallConfig().set(EngineConfig.KEY_MEMORY_WINDOWS, windows ? "auto" : "false");
            try (ServiceNode node = new ServiceNode(config)) {
                assertEquals(windows, node.service.windowUse().on(), node.service.windowUse().reason());
                EngineTestSupport.MapOutput b = EngineTestSupport.writeMapOutput(
                        Files.createDirectories(dir.resolve("replay-" + windows)), 0, 8, 4, EngineTestSupport.size(20_000), 2);
                node.service.registerMapOutput("app-b", 0, 8, b.file(), b.offsets());
                BlockId whole = new BlockId(0, 8, 0, 4);
                try (HostileReducer victim = new HostileReducer(node.clientProvider, node.service.address(), "app-b", SECRET_B);
                     HostileReducer thief = new HostileReducer(node.clientProvider, node.service.address(), "app-b", SECRET_B)) {
                    victim.postReceives();
                    BlockDescriptor taken = victim.describe(0, List.of(whole)).getFirst();
                    assertEquals(WorkCompletionStatus.SUCCESS, victim.read(taken));
                    assertArrayEquals(b.bytes(whole), victim.landed((int) taken.length()), "the descriptor is genuine");

                    WorkCompletionStatus replay = thief.read(taken);
                    if (!windows) {
                        assertEquals(WorkCompletionStatus.SUCCESS, replay, "without windows an rkey is good on every QP of its PD");
                        continue;
                    }
                    assertEquals(WorkCompletionStatus.REM_ACCESS_ERR, replay, "the window is bound to the victim's queue pair");
                    assertFalse(java.util.Arrays.equals(b.bytes(whole), thief.landed((int) taken.length())), "the bytes reached the thief");
                    assertEquals(WorkCompletionStatus.SUCCESS, victim.read(taken), "the victim is still served");
                    assertArrayEquals(b.bytes(whole), victim.landed((int) taken.length()));
                }
            }
        }
    }

    @Test
    void aReducerCannotEndAnotherReducersDataConnection() throws Exception {
        try (ServiceNode node = new ServiceNode()) {
            EngineTestSupport.MapOutput b = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("b")), 0, 8, 2,
                    EngineTestSupport.size(8_000), 5);
            node.service.registerMapOutput("app-b", 0, 8, b.file(), b.offsets());
            BlockId whole = new BlockId(0, 8, 0, 2);
            try (HostileReducer victim = new HostileReducer(node.clientProvider, node.service.address(), "app-b", SECRET_B);
                 HostileReducer otherApp = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A);
                 HostileReducer sameApp = new HostileReducer(node.clientProvider, node.service.address(), "app-b", SECRET_B)) {
                victim.postReceives();
                int target = victim.serverQpNumber(); // the worst case: the attacker has guessed it
                java.io.IOException fromOtherApp = assertThrows(java.io.IOException.class, () -> otherApp.disconnect(target));
                assertTrue(fromOtherApp.getMessage().contains("no data connection with queue pair " + target),
                        fromOtherApp.getMessage());
                assertThrows(java.io.IOException.class, () -> sameApp.disconnect(target),
                        "another control connection of the same application");
                assertEquals(3, node.service.counters().servingConnections());

                BlockDescriptor d = victim.describe(0, List.of(whole)).getFirst();
                assertEquals(WorkCompletionStatus.SUCCESS, victim.read(d), "the victim is still served");
                assertArrayEquals(b.bytes(whole), victim.landed((int) d.length()));

                // Its own connection a reducer may end: the queue pairs go, the control connection stays.
                victim.disconnect(target);
                EngineTestSupport.eventually("the victim's own DISCONNECT retired its connection",
                        () -> node.service.counters().servingConnections() == 2);
                assertTrue(victim.controlOpen(), "the control connection outlives the data connection");
                assertThrows(java.io.IOException.class, () -> victim.disconnect(target), "ended already: nothing to end");
            }
        }
    }

    /**
     * One application describes its outputs over and over, so each stays within its lease and none can
     * be released: it may pin its own share of the node's registered memory, not the whole node.
     */
    @Test
    void anApplicationKeepingItsOutputsDescribedCannotPinTheWholeNode() throws Exception {
        int size = EngineTestSupport.size(700_000);
        // Each application's send and receive buffers count in the registered bytes too: room for both applications'.
        long pools = 2L * (32 + 16) * EngineTestSupport.smallConfig().receiveBufferSize();
        EngineConfig config = EngineTestSupport.smallConfig()
                .set(EngineConfig.KEY_REGISTERED_MEMORY_LIMIT, Long.toString(3L * size + pools))
                .set(EngineConfig.KEY_REGISTERED_MEMORY_LIMIT_PER_APPLICATION, Long.toString(3L * size / 2));
        try (ServiceNode node = new ServiceNode(config)) {
            Path aDir = Files.createDirectories(dir.resolve("a"));
            for (int map = 0; map < 3; map++) {
                Path f = Files.write(aDir.resolve("shuffle_0_" + map + "_0.data"), new byte[size]);
                node.service.registerMapOutput("app-a", 0, map, f, new long[] {0, size});
            }
            EngineTestSupport.MapOutput b = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("b")), 0, 0, 1,
                    size, 5);
            node.service.registerMapOutput("app-b", 0, 0, b.file(), b.offsets());
            try (HostileReducer hog = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A)) {
                hog.postReceives();
                hog.describe(0, List.of(BlockId.of(0, 0, 0)));
                Message refused = hog.ask(new Message.FetchRequest(2, 0, List.of(BlockId.of(0, 1, 0))));
                assertTrue(refused instanceof Message.ErrorResponse e && e.kind() == Message.ErrorKind.REFUSED,
                        "a second output beyond the application's share: " + refused);

                RdmaShuffleEngine victim = node.reducer("app-b", SECRET_B);
                List<BlockId> blocks = EngineTestSupport.everyPartition(List.of(b));
                Collector c = new Collector(blocks.size());
                victim.fetchBlocks(node.service.address(), blocks, c);
                c.await().assertAllIntact(EngineTestSupport.expected(List.of(b), blocks));
                hog.describe(0, List.of(BlockId.of(0, 0, 0))); // the hog's own lease renewed, still served
                EngineTestSupport.assertNothingLeaks(victim, node.service);
            }
        }
    }

    @Test
    void aSymlinkedDataFileIsRefused_andThePeerLearnsNeitherPathNorSize() throws Exception {
        Path nmLocal = Files.createDirectories(dir.resolve("nm-local"));
        Path appDir = Files.createDirectories(nmLocal.resolve("usercache/alice/appcache/app-a"));
        Path secretFile = Files.writeString(Files.createDirectories(dir.resolve("nm-private")).resolve("keytab"),
                "x".repeat(4321));
        Path link = Files.createSymbolicLink(appDir.resolve("shuffle_0_5_0.data"), secretFile);
        Confinement confinement = new Confinement(List.of(Confinement.applicationDir(nmLocal,
                "usercache/alice/appcache/app-a")), null);
        try (ServiceNode node = new ServiceNode()) {
            RdmaShuffleEngine reducer = node.reducer("app-a", SECRET_A);
            // The job wrote an index that covers the whole target, as an attacker would.
            node.service.resolver((app, shuffle, map) -> app.equals("app-a") && map == 5
                    ? new MapOutputRegistry.ResolvedOutput(confinement.file(link), new long[] {0, 4321}, null) : null);
            BlockId block = BlockId.of(0, 5, 0);
            Collector c = new Collector(1);
            reducer.fetchBlocks(node.service.address(), List.of(block), c);
            c.await();
            Throwable e = c.failed.get(block);
            assertTrue(e != null && e.getMessage().contains(block + ": map output file refused"), String.valueOf(e));
            assertEquals(BlockFetchException.Kind.REFUSED, BlockFetchException.kindOf(e));
            for (String leak : List.of(secretFile.toString(), link.toString(), "keytab", "4321")) {
                assertFalse(e.getMessage().contains(leak), "the peer was told " + leak + ": " + e.getMessage());
            }
            assertEquals(0, node.service.counters().registeredMapOutputBytes(), "nothing of the target was registered");
            EngineTestSupport.assertNothingLeaks(reducer, node.service);
        }
    }

    @Test
    void aReducerThatNeverPostsReceivesDoesNotStallOthers() throws Exception {
        try (ServiceNode node = new ServiceNode()) {
            RdmaShuffleEngine reducer = node.reducer("app-a", SECRET_A);
            EngineTestSupport.MapOutput a = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("a")), 0, 3, 8,
                    EngineTestSupport.size(5000), 3);
            node.service.registerMapOutput("app-a", 0, 3, a.file(), a.offsets());
            try (HostileReducer silent = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A)) {
                // Ask, but never post a receive: the service's answer meets RNR on every try.
                silent.sendRaw(slot -> new org.rdmashuffle.core.protocol.MessageCodec(HostileReducer.BUFFER)
                        .encode(new org.rdmashuffle.core.protocol.Message.FetchRequest(1, 0, List.of(BlockId.of(0, 3, 0))), slot));
                List<BlockId> blocks = EngineTestSupport.everyPartition(List.of(a));
                Collector c = new Collector(blocks.size());
                reducer.fetchBlocks(node.service.address(), blocks, c);
                c.await().assertAllIntact(EngineTestSupport.expected(List.of(a), blocks));
                // The silent reducer's connection fails on its own (finite RNR retry), giving its send slot back.
                EngineTestSupport.eventually("the silent reducer's connection retired: " + node.service.counters(),
                        () -> node.service.counters().servingConnections() == 1);
            }
            EngineTestSupport.assertNothingLeaks(reducer, node.service);
        }
    }

    /**
     * A reducer offers 64 queue pairs per connection where the service allows 1. The service makes
     * one (a peer never chooses our resource sizes), the answer says so, and the reducer keeps one:
     * its fetch works, with one queue pair on each side.
     */
    @Test
    void aReducerOfferingMoreQueuePairsThanTheServerAllowsGetsTheServersCount() throws Exception {
        try (ServiceNode node = new ServiceNode()) {
            RdmaShuffleEngine greedy = node.reducer("app-a", SECRET_A, EngineTestSupport.smallConfig()
                    .set(org.rdmashuffle.core.config.EngineConfig.KEY_QPS_PER_PEER, "64"));
            EngineTestSupport.MapOutput a = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("greedy")), 0, 4,
                    8, EngineTestSupport.size(5000), 31);
            node.service.registerMapOutput("app-a", 0, 4, a.file(), a.offsets());
            List<BlockId> blocks = EngineTestSupport.everyPartition(List.of(a));
            Collector c = new Collector(blocks.size());
            greedy.fetchBlocks(node.service.address(), blocks, c);
            c.await().assertAllIntact(EngineTestSupport.expected(List.of(a), blocks));
            assertEquals(1, greedy.counters().queuePairs(), "the reducer's queue pairs");
            assertEquals(1, node.service.counters().queuePairs(), "the service's queue pairs");
            EngineTestSupport.assertNothingLeaks(greedy, node.service);
        }
    }

    /**
     * A reducer's software-provider endpoint names an address and a port to dial. The address must be
     * the one its control connection comes from (see below), but the port is its to choose: a service
     * that dialled would connect to any port of the reducer's host (another service there, or a
     * black hole that holds a connector thread). A node service's queue pairs are passive: they never
     * dial, the reducer dials them. Four CONNECTs naming a listener that is not a software device are
     * all answered, the listener never sees a connection, and another application is served meanwhile.
     */
    @Test
    @org.junit.jupiter.api.Tag(EngineTestSupport.SOFTWARE_PROVIDER_ONLY)
    void aReducerCannotMakeTheServiceDialAPortOfItsHost() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeFalse(EngineTestSupport.usesDevice(),
                "an attack on the software provider's dial: libibverbs does not dial peers");
        java.net.InetAddress serviceHost = java.net.InetAddress.getByName("127.0.0.3");
        java.net.InetAddress attackerHost = java.net.InetAddress.getByName("127.0.0.2");
        try (org.rdmashuffle.verbs.software.SoftwareProvider serviceProvider = new org.rdmashuffle.verbs.software.SoftwareProvider(
                     new org.rdmashuffle.verbs.software.SoftwareProvider.Config(serviceHost, 0,
                             org.rdmashuffle.verbs.software.SoftwareProvider.Admission.ISSUED_TOKEN));
             org.rdmashuffle.verbs.software.SoftwareProvider clientProvider = new org.rdmashuffle.verbs.software.SoftwareProvider(
                     org.rdmashuffle.verbs.software.SoftwareProvider.Config.loopback());
             // Any listener on the attacker's host: another service, or one that never answers.
             java.net.ServerSocket target = new java.net.ServerSocket(0, 50, attackerHost);
             RdmaShuffleEngine service = RdmaShuffleEngine.startService(EngineTestSupport.smallConfig(),
                     Map.of("app-a", SECRET_A, "app-b", SECRET_B)::get, serviceProvider);
             RdmaShuffleEngine reducerB = RdmaShuffleEngine.start(EngineTestSupport.smallConfig(), "app-b", SECRET_B,
                     clientProvider)) {
            EngineTestSupport.MapOutput b = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("b")), 0, 4, 4,
                    5000, 4);
            service.registerMapOutput("app-b", 0, 4, b.file(), b.offsets());
            // Its address sorts below the service's (127.0.0.2 < 127.0.0.3): by the usual rule the service would dial.
            org.rdmashuffle.verbs.QueuePairEndpoint atTheTarget = softwareEndpoint(attackerHost, target.getLocalPort());
            List<org.rdmashuffle.core.control.ControlClient> attackers = new java.util.ArrayList<>();
            List<java.util.concurrent.CompletableFuture<Throwable>> attacks = new java.util.ArrayList<>();
            try {
                for (int i = 0; i < 4; i++) {
                    org.rdmashuffle.core.control.ControlClient attacker = org.rdmashuffle.core.control.ControlClient.connect(
                            service.address(), SECRET_A, "app-a", 64 << 10, java.time.Duration.ofSeconds(30), attackerHost);
                    attackers.add(attacker);
                    java.util.concurrent.CompletableFuture<Throwable> attack = new java.util.concurrent.CompletableFuture<>();
                    Thread.ofPlatform().daemon().start(() -> { // all at once: the common pool may have one thread
                        try {
                            attacker.call(org.rdmashuffle.core.protocol.ConnectCodec.CONNECT,
                                    org.rdmashuffle.core.protocol.ConnectCodec.encode(
                                            new org.rdmashuffle.core.protocol.ConnectCodec.Connect(4096, List.of(atTheTarget))),
                                    java.time.Duration.ofSeconds(60));
                            attack.complete(null);
                        } catch (java.io.IOException e) {
                            attack.complete(e);
                        }
                    });
                    attacks.add(attack);
                }
                for (java.util.concurrent.CompletableFuture<Throwable> attack : attacks) {
                    assertEquals(null, attack.get(30, java.util.concurrent.TimeUnit.SECONDS),
                            "a CONNECT is answered at once: the service waits for the reducer to dial it");
                }
                target.setSoTimeout(1000);
                org.junit.jupiter.api.Assertions.assertThrows(java.net.SocketTimeoutException.class, target::accept,
                        "the service dialled the port the reducer named");
                List<BlockId> blocks = EngineTestSupport.everyPartition(List.of(b));
                Collector c = new Collector(blocks.size());
                reducerB.fetchBlocks(service.address(), blocks, c);
                c.await().assertAllIntact(EngineTestSupport.expected(List.of(b), blocks));
            } finally {
                attackers.forEach(org.rdmashuffle.core.control.ControlClient::close);
            }
            EngineTestSupport.assertNothingLeaks(reducerB, service);
        }
    }

    /**
     * Application a floods the service with requests that each name a hundred outputs to find on disk
     * (50 ms each): five seconds of disk work per request, where a server thread once took a whole
     * request at a time (and both threads were a's). Searches run on the lookup threads, one of a user
     * at a time, and a request waits for them without holding a server thread: application b, whose
     * first request needs a server thread (its output is registered then), is answered within 4 s.
     */
    @Test
    @org.junit.jupiter.api.Tag(EngineTestSupport.TIMING)
    void aFloodOfRequestsIsBoundedPerApplication() throws Exception {
        // It compares a wait with the flood's disk work (4 s against 5 s per request): the emulated guest's JVM is 20-60x slower.
        org.junit.jupiter.api.Assumptions.assumeFalse(EngineTestSupport.usesDevice(),
                "a timing comparison: runs on the software provider, not in the emulated Soft-RoCE guest");
        try (ServiceNode node = new ServiceNode()) {
            EngineTestSupport.MapOutput onDisk = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("a")), 0, 1,
                    1, 4096, 1);
            // Application a's outputs are found on disk: slowly, so its requests' slow work piles up.
            node.service.resolver((app, shuffle, map) -> {
                if (!app.equals("app-a")) {
                    return null;
                }
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    throw new java.io.InterruptedIOException("service closing");
                }
                return new MapOutputRegistry.ResolvedOutput(org.rdmashuffle.core.server.files.OutputFile.trusted(onDisk.file()),
                        onDisk.offsets(), null);
            });
            EngineTestSupport.MapOutput b = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("b")), 0, 6, 4,
                    EngineTestSupport.size(5000), 6);
            node.service.registerMapOutput("app-b", 0, 6, b.file(), b.offsets()); // its first request registers it: server work
            RdmaShuffleEngine reducerB = node.reducer("app-b", SECRET_B);
            try (HostileReducer flooder = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A)) {
                // 40 requests of 100 distinct outputs each: 4,000 disk searches of 50 ms.
                flooder.flood(40, k -> {
                    List<BlockId> hundred = new java.util.ArrayList<>();
                    for (int m = 0; m < 100; m++) {
                        hundred.add(BlockId.of(0, 1000 + 100L * k + m, 0));
                    }
                    return new org.rdmashuffle.core.protocol.Message.FetchRequest(k + 1, 0, hundred);
                });
                long start = System.nanoTime();
                List<BlockId> blocks = EngineTestSupport.everyPartition(List.of(b));
                Collector c = new Collector(blocks.size());
                reducerB.fetchBlocks(node.service.address(), blocks, c);
                assertTrue(c.answeredWithin(java.time.Duration.ofSeconds(4)),
                        "application b waited behind application a's flood");
                c.assertAllIntact(EngineTestSupport.expected(List.of(b), blocks));
                assertTrue(System.nanoTime() - start < 4_000_000_000L);
            }
        }
    }

    @Test
    void oneApplicationCannotTakeEveryConnectionSlot() throws Exception {
        EngineConfig service = EngineTestSupport.smallConfig().set(EngineConfig.KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION, "2");
        try (ServiceNode node = new ServiceNode(service)) {
            HostileReducer first = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A);
            HostileReducer second = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A);
            try {
                // A third is refused: at the handshake (told "busy": control connections have the same bound).
                java.io.IOException e = org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class,
                        () -> new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A).close());
                assertTrue(e.getMessage().contains("busy"), e.getMessage());
                // Application b still gets in.
                new HostileReducer(node.clientProvider, node.service.address(), "app-b", SECRET_B).close();
            } finally {
                first.close();
                second.close();
            }
            EngineTestSupport.eventually("connections retired", () -> node.service.counters().servingConnections() == 0);
        }
    }

    @Test
    @org.junit.jupiter.api.Tag(EngineTestSupport.SOFTWARE_PROVIDER_ONLY)
    void aReducerCannotMakeTheServiceDialAnAddressThatIsNotItsOwn() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeFalse(EngineTestSupport.usesDevice(),
                "an attack on the software provider's dial: libibverbs does not dial peers");
        java.net.InetAddress elsewhere = java.net.InetAddress.getByName("127.0.0.2");
        // The service's data listener sorts above the target, so it is the service that would dial.
        try (org.rdmashuffle.verbs.software.SoftwareProvider serviceProvider = new org.rdmashuffle.verbs.software.SoftwareProvider(
                     new org.rdmashuffle.verbs.software.SoftwareProvider.Config(java.net.InetAddress.getByName("127.0.0.3"), 0,
                             org.rdmashuffle.verbs.software.SoftwareProvider.Admission.ISSUED_TOKEN));
             RdmaShuffleEngine service = RdmaShuffleEngine.startService(EngineTestSupport.smallConfig(),
                     Map.of("app-a", SECRET_A)::get, serviceProvider);
             java.net.ServerSocket target = new java.net.ServerSocket(0, 50, elsewhere);
             org.rdmashuffle.core.control.ControlClient control = org.rdmashuffle.core.control.ControlClient.connect(
                     service.address(), SECRET_A, "app-a", 64 << 10, java.time.Duration.ofSeconds(10))) {
            org.rdmashuffle.verbs.QueuePairEndpoint there = softwareEndpoint(elsewhere, target.getLocalPort());
            java.io.IOException e = org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class,
                    () -> control.call(org.rdmashuffle.core.protocol.ConnectCodec.CONNECT, org.rdmashuffle.core.protocol.ConnectCodec
                            .encode(new org.rdmashuffle.core.protocol.ConnectCodec.Connect(4096, List.of(there))),
                            java.time.Duration.ofSeconds(10)));
            assertTrue(e.getMessage().contains("data address 127.0.0.2 is not the address its control connection comes from"),
                    e.getMessage());
            target.setSoTimeout(500);
            org.junit.jupiter.api.Assertions.assertThrows(java.net.SocketTimeoutException.class, target::accept,
                    "the service dialled the address the reducer named");
            assertEquals(0, service.counters().servingConnections());
        }
    }
}
