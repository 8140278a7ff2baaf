package org.rdmashuffle.core.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.protocol.BlockDescriptor;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.server.files.OutputFile;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.WorkCompletions;
import org.rdmashuffle.verbs.testing.TestProviders;

/** Map outputs registered over their files, described as blocks a peer can read, within a memory limit. */
class MapOutputRegistryTest {
    private static final long SECOND = 1_000_000_000L;

    @TempDir
    Path dir;
    private TestProviders.OpenDevice device;
    private VerbsContext context;
    private ProtectionDomain pd;
    private final AtomicLong now = new AtomicLong(100 * SECOND);

    @BeforeEach
    void open() {
        device = TestProviders.openDevice();
        context = device.context;
        pd = context.allocateProtectionDomain();
    }

    @AfterEach
    void close() {
        pd.close();
        device.close();
    }

    private Path dataFile(String name, int bytes) throws IOException {
        byte[] data = new byte[bytes];
        for (int i = 0; i < bytes; i++) {
            data[i] = (byte) (i * 31 + name.hashCode());
        }
        return Files.write(dir.resolve(name), data);
    }

    @Test
    void describedBlocksAreReadRemotelyByteForByte() throws IOException {
        Path file = dataFile("shuffle_1_7_0.data", 10_000);
        try (MapOutputRegistry registry = new MapOutputRegistry(pd, 1 << 20, 60_000, now::get)) {
            registry.register(1, 7, file, new long[] {0, 1000, 1000, 6000, 10_000});

            BlockDescriptor b = registry.describe(1, 7, 2, 4); // partitions 2 and 3: bytes [1000, 10000)
            assertEquals(9000, b.length());
            byte[] expected = Arrays.copyOfRange(Files.readAllBytes(file), 1000, 10_000);
            assertArrayEquals(expected, readRemotely(b));
            assertTrue(registry.describe(1, 7, 1, 2).isEmpty(), "partition 1 is empty");
        }
    }

    @Test
    void regionsAreCachedAcrossDescriptions() throws IOException {
        Path file = dataFile("a.data", 4096);
        try (MapOutputRegistry registry = new MapOutputRegistry(pd, 1 << 20, 60_000, now::get)) {
            registry.register(1, 1, file, new long[] {0, 2048, 4096});
            BlockDescriptor first = registry.describe(1, 1, 0, 1);
            BlockDescriptor second = registry.describe(1, 1, 1, 2);
            assertEquals(first.rkey(), second.rkey());
            assertEquals(first.address() + 2048, second.address());
            assertEquals(1, registry.registrations());
            assertEquals(4096, registry.registeredBytes());
        }
    }

    /** A PD whose file regions take until {@code closing} is opened to close, as a region still being read does. */
    private ProtectionDomain slowToClose(CountDownLatch closing, CountDownLatch closeStarted) {
        return (ProtectionDomain) java.lang.reflect.Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {ProtectionDomain.class}, (proxy, method, args) -> {
                    Object result = method.invoke(pd, args);
                    if (!method.getName().startsWith("register") || !method.getName().endsWith("File")) { // registerFile, registerOwnedFile
                        return result;
                    }
                    org.rdmashuffle.verbs.MemoryRegion region = (org.rdmashuffle.verbs.MemoryRegion) result;
                    return java.lang.reflect.Proxy.newProxyInstance(getClass().getClassLoader(),
                            new Class<?>[] {org.rdmashuffle.verbs.MemoryRegion.class}, (p, m, a) -> {
                                if (m.getName().equals("close")) {
                                    closeStarted.countDown();
                                    closing.await();
                                }
                                return m.invoke(region, a);
                            });
                });
    }

    @Test
    void closingARegionNeverHoldsTheRegistryLock() throws Exception {
        CountDownLatch closing = new CountDownLatch(1);
        CountDownLatch closeStarted = new CountDownLatch(1);
        try (MapOutputRegistry registry = new MapOutputRegistry(slowToClose(closing, closeStarted), 12_000, 1_000, now::get)) {
            registry.register(1, 1, dataFile("c1.data", 6000), new long[] {0, 6000});
            registry.register(1, 2, dataFile("c2.data", 6000), new long[] {0, 6000});
            registry.describe(1, 1, 0, 1);
            now.addAndGet(2 * SECOND);
            // Registering output 2 releases output 1, whose region is slow to close.
            CompletableFuture<BlockDescriptor> second = CompletableFuture.supplyAsync(() -> registry.describe(1, 2, 0, 1), threads);
            assertTrue(closeStarted.await(10, TimeUnit.SECONDS), "output 1 was never released");
            CompletableFuture<Long> other = CompletableFuture.supplyAsync(registry::registeredBytes, threads);
            try {
                assertEquals(8192L, other.get(5, TimeUnit.SECONDS), "the registry answered while a region closed");
            } finally {
                closing.countDown();
            }
            assertEquals(6000, second.get(10, TimeUnit.SECONDS).length());
        }
    }

    @Test
    void applicationsShareTheNodesBudget_andTakeOnlyIdleRegionsFromEachOther() throws IOException {
        RegistryBudget node = new RegistryBudget(40960);
        try (MapOutputRegistry a = new MapOutputRegistry(pd, 40960, 1_000, node, now::get);
             MapOutputRegistry b = new MapOutputRegistry(pd, 40960, 1_000, node, now::get)) {
            a.register("app-a", 1, 1, dataFile("a1.data", 24576), new long[] {0, 24576});
            a.register("app-a", 1, 2, dataFile("a2.data", 12288), new long[] {0, 12288});
            b.register("app-b", 1, 1, dataFile("b1.data", 24576), new long[] {0, 24576});
            a.describe("app-a", 1, 1, 0, 1);
            RegisteredMemoryExhaustedException full = assertThrows(RegisteredMemoryExhaustedException.class,
                    () -> b.describe("app-b", 1, 1, 0, 1));
            assertTrue(full.getMessage().contains("node's registered-memory budget (24576 bytes in 1 regions in use"), full.getMessage());
            assertEquals(24576, node.usedBytes(), "b's failed attempt gave its reservation back; a's region, in its lease, stays");
            assertEquals(1, a.registeredRegions());

            now.addAndGet(2 * SECOND); // a's lease runs out: its idle region makes room for b
            b.describe("app-b", 1, 1, 0, 1);
            assertEquals(0, a.registeredRegions());
            assertEquals(24576, node.usedBytes());
            assertEquals(1, a.registrationCounts().evictions(), "counted where the region was: a's");
            assertEquals(0, b.registrationCounts().evictions());

            a.describe("app-a", 1, 2, 0, 1); // fits beside b's: nothing released
            assertEquals(36864, node.usedBytes());
            assertThrows(RegisteredMemoryExhaustedException.class, () -> a.describe("app-a", 1, 1, 0, 1),
                    "b's region is in its lease");
            assertEquals(1, b.registeredRegions());
        }
        assertEquals(0, node.usedBytes(), "closing gives every byte back");
    }

    /** The largest holder's idle regions go first: the small one's stay registered. */
    @Test
    void roomIsTakenFromTheLargestIdleHolderFirst() throws IOException {
        RegistryBudget node = new RegistryBudget(40960);
        try (MapOutputRegistry big = new MapOutputRegistry(pd, 40960, 1_000, node, now::get);
             MapOutputRegistry small = new MapOutputRegistry(pd, 40960, 1_000, node, now::get);
             MapOutputRegistry late = new MapOutputRegistry(pd, 40960, 1_000, node, now::get)) {
            big.register("big", 1, 1, dataFile("big.data", 28672), new long[] {0, 28672});
            small.register("small", 1, 1, dataFile("small.data", 8192), new long[] {0, 8192});
            late.register("late", 1, 1, dataFile("late.data", 12288), new long[] {0, 12288});
            big.describe("big", 1, 1, 0, 1);
            small.describe("small", 1, 1, 0, 1);
            now.addAndGet(2 * SECOND);
            late.describe("late", 1, 1, 0, 1);
            assertEquals(0, big.registeredRegions());
            assertEquals(1, small.registeredRegions());
            assertEquals(20480, node.usedBytes());
        }
    }

    @Test
    void theLimitReleasesTheLeastRecentlyDescribedOutsideTheirLease() throws IOException {
        try (MapOutputRegistry registry = new MapOutputRegistry(pd, 40960, 1_000, now::get)) {
            registry.register(1, 1, dataFile("1.data", 24576), new long[] {0, 24576});
            registry.register(1, 2, dataFile("2.data", 24576), new long[] {0, 24576});
            registry.describe(1, 1, 0, 1);
            RegisteredMemoryExhaustedException busy = assertThrows(RegisteredMemoryExhaustedException.class,
                    () -> registry.describe(1, 2, 0, 1));
            assertTrue(busy.getMessage().contains("limits of 40960 bytes and 2147483647 regions: 24576 bytes in 1 regions are registered"),
                    busy.getMessage());
            now.addAndGet(2 * SECOND); // output 1's lease has run out
            registry.describe(1, 2, 0, 1);
            assertEquals(1, registry.registeredRegions());
            assertEquals(24576, registry.registeredBytes());
            now.addAndGet(2 * SECOND);
            registry.describe(1, 1, 0, 1); // registered again on demand
            assertEquals(3, registry.registrations());
            assertEquals(3, registry.registrationCounts().count(), "the operators' count has the registration made again");
            assertEquals(2, registry.registrationCounts().evictions(), "output 1 made room for 2, then 2 for 1");
        }
    }

    @Test
    void anOutputHeldByAConnection_staysUntilReleasedOrItsConnectionGoes_orItsHeldLeaseEnds() throws IOException {
        try (MapOutputRegistry registry = new MapOutputRegistry(pd, 40960, 1_000, now::get)) {
            registry.register(1, 1, dataFile("1.data", 24576), new long[] {0, 24576});
            registry.register(1, 2, dataFile("2.data", 24576), new long[] {0, 24576});
            ConnectionHolds reducer = new ConnectionHolds();
            ConnectionHolds other = new ConnectionHolds();
            registry.describe(MapOutputRegistry.OWN, 1, 1, 0, 1, new HeldAnswer(reducer)); // held, not leased
            assertThrows(RegisteredMemoryExhaustedException.class, () -> registry.describe(1, 2, 0, 1), "held: not evicted");
            registry.release(other, MapOutputRegistry.OWN, List.of(new Message.Released(1, 1, 5)));
            assertThrows(RegisteredMemoryExhaustedException.class, () -> registry.describe(1, 2, 0, 1),
                    "another connection cannot release what this one holds");
            registry.release(reducer, MapOutputRegistry.OWN, List.of(new Message.Released(1, 1, 1)));
            registry.describe(1, 2, 0, 1); // released: output 1 makes room at once, long before a lease
            assertEquals(1, registry.registrationCounts().evictions());

            // Held by two answers: one release is not enough; the connection going is.
            now.addAndGet(2 * SECOND); // output 2's lease is over
            registry.describe(MapOutputRegistry.OWN, 1, 1, 0, 1, new HeldAnswer(reducer));
            registry.describe(MapOutputRegistry.OWN, 1, 1, 0, 1, new HeldAnswer(reducer));
            registry.release(reducer, MapOutputRegistry.OWN, List.of(new Message.Released(1, 1, 1)));
            assertThrows(RegisteredMemoryExhaustedException.class,
                    () -> registry.describe(MapOutputRegistry.OWN, 1, 2, 0, 1, new HeldAnswer(other)), "one answer still holds 1");
            registry.drop(reducer);
            registry.describe(MapOutputRegistry.OWN, 1, 2, 0, 1, new HeldAnswer(other));
            assertEquals(3, registry.registrationCounts().evictions());

            // A holder that never releases keeps an output no longer than a lease from its last held answer.
            now.addAndGet(2 * SECOND);
            registry.describe(1, 1, 0, 1);
            assertEquals(4, registry.registrationCounts().evictions());
            assertEquals(1, registry.registeredRegions());
        }
    }

    @Test
    void anAnswerNotSent_givesBackWhatItHeld_andAConnectionDroppedHoldsNothingAfter() throws IOException {
        try (MapOutputRegistry registry = new MapOutputRegistry(pd, 40960, 1_000, now::get)) {
            registry.register(1, 1, dataFile("1.data", 24576), new long[] {0, 24576});
            registry.register(1, 2, dataFile("2.data", 24576), new long[] {0, 24576});
            ConnectionHolds reducer = new ConnectionHolds();
            HeldAnswer refused = new HeldAnswer(reducer);
            registry.describe(MapOutputRegistry.OWN, 1, 1, 0, 1, refused);
            registry.describe(MapOutputRegistry.OWN, 1, 1, 0, 1, refused); // one answer holds an output once
            registry.giveBack(refused);
            registry.describe(1, 2, 0, 1); // output 1 neither leased nor held: room at once
            assertTrue(registry.crowded(), "24576 of 40960 bytes registered: more than half");

            registry.drop(reducer);
            now.addAndGet(2 * SECOND);
            registry.describe(MapOutputRegistry.OWN, 1, 1, 0, 1, new HeldAnswer(reducer)); // after its connection went
            synchronized (registry) {
                assertEquals(0, reducer.outputs(), "a dropped connection holds nothing");
            }
            registry.describe(1, 2, 0, 1);
        }
    }

    @Test
    void anOutputLargerThanTheLimitIsRefusedWithTheNumbers() throws IOException {
        try (MapOutputRegistry registry = new MapOutputRegistry(pd, 1000, 1_000, now::get)) {
            registry.register(3, 9, dataFile("big.data", 5000), new long[] {0, 5000});
            RegisteredMemoryExhaustedException e = assertThrows(RegisteredMemoryExhaustedException.class,
                    () -> registry.describe(3, 9, 0, 1));
            assertEquals("map output 9 of shuffle 3 pins 8192 bytes (whole pages), more than the registered-memory limit of 1000",
                    e.getMessage());
        }
    }

    @Test
    void badIndexesAndRangesAreRefusedWithWhatWasWrong() throws IOException {
        Path file = dataFile("x.data", 100);
        try (MapOutputRegistry registry = new MapOutputRegistry(pd, 1 << 20, 1_000, now::get)) {
            IllegalArgumentException shrinking = assertThrows(IllegalArgumentException.class,
                    () -> registry.register(1, 1, file, new long[] {0, 60, 40, 100}));
            assertTrue(shrinking.getMessage().contains("offset of partition 2 (40) is below that of partition 1 (60)"),
                    shrinking.getMessage());
            IllegalArgumentException shortIndex = assertThrows(IllegalArgumentException.class,
                    () -> registry.register(1, 1, file, new long[] {0, 50}));
            assertTrue(shortIndex.getMessage().contains("the index ends at 50 but the data file has 100 bytes"),
                    shortIndex.getMessage());
            registry.register(1, 1, file, new long[] {0, 50, 100});
            IllegalArgumentException range = assertThrows(IllegalArgumentException.class, () -> registry.describe(1, 1, 1, 3));
            assertTrue(range.getMessage().contains("partitions [1, 3) of map output 1 of shuffle 1, which has 2"), range.getMessage());
            IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class, () -> registry.describe(1, 2, 0, 1));
            assertEquals("no map output 2 of shuffle 1 is registered here", unknown.getMessage());
        }
    }

    @Test
    void unregisteringAShuffleAndClosingReleaseEverything() throws IOException {
        MapOutputRegistry registry = new MapOutputRegistry(pd, 1 << 20, 1_000, now::get);
        registry.register(1, 1, dataFile("s1.data", 1000), new long[] {0, 1000});
        registry.register(2, 1, dataFile("s2.data", 2000), new long[] {0, 2000});
        registry.describe(1, 1, 0, 1);
        registry.describe(2, 1, 0, 1);
        registry.unregisterShuffle(1);
        assertEquals(4096, registry.registeredBytes(), "a 2000-byte file pins a page");
        assertEquals(1, registry.mapOutputs());
        registry.close();
        assertEquals(0, registry.registeredBytes());
        assertEquals(0, registry.registeredRegions());
        assertEquals(0, registry.registrationCounts().evictions(), "regions forgotten with their shuffle are not evictions");
        assertThrows(IllegalStateException.class, () -> registry.describe(2, 1, 0, 1));
    }

    /** Threads of their own: the common pool has one on a 2-core machine, and a blocked task would starve the others. */
    private final java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newFixedThreadPool(3, r -> {
        Thread t = new Thread(r, "registry-test");
        t.setDaemon(true);
        return t;
    });

    @AfterEach
    void stopThreads() {
        threads.shutdownNow();
    }

    @Test
    void aDiskSearchForOneApplication_doesNotHoldUpAnotherApplicationsKnownOutputs() throws Exception {
        Path known = dataFile("b.data", 1000);
        Path slow = dataFile("a.data", 2000);
        CountDownLatch searching = new CountDownLatch(1);
        CountDownLatch diskAnswers = new CountDownLatch(1);
        try (MapOutputRegistry registry = new MapOutputRegistry(pd, 1 << 20, 60_000, now::get)) {
            registry.register("app-b", 0, 5, known, new long[] {0, 1000});
            registry.describe("app-b", 0, 5, 0, 1);
            registry.resolver((app, shuffle, map) -> {
                searching.countDown();
                try {
                    diskAnswers.await();
                } catch (InterruptedException e) {
                    throw new IOException(e);
                }
                return new MapOutputRegistry.ResolvedOutput(OutputFile.trusted(slow), new long[] {0, 2000}, null);
            });
            CompletableFuture<BlockDescriptor> searched = CompletableFuture.supplyAsync(
                    () -> registry.describe("app-a", 0, 9, 0, 1), threads);
            assertTrue(searching.await(10, TimeUnit.SECONDS), "the resolver was never asked");

            // While app-a's output is being looked for, app-b's is described, and the registry answers.
            CompletableFuture<BlockDescriptor> other = CompletableFuture.supplyAsync(
                    () -> registry.describe("app-b", 0, 5, 0, 1), threads);
            assertEquals(1000, other.get(10, TimeUnit.SECONDS).length(), "a known output waited for another's disk search");
            assertEquals(1, registry.mapOutputs());
            assertFalse(searched.isDone());

            diskAnswers.countDown();
            assertEquals(2000, searched.get(10, TimeUnit.SECONDS).length());
            assertEquals(2, registry.mapOutputs());
        }
    }

    @Test
    void requestsForTheSameUnknownOutput_shareOneSearch_andOneRegistration() throws Exception {
        Path file = dataFile("a.data", 3000);
        CountDownLatch searching = new CountDownLatch(1);
        CountDownLatch diskAnswers = new CountDownLatch(1);
        AtomicInteger searches = new AtomicInteger();
        try (MapOutputRegistry registry = new MapOutputRegistry(pd, 1 << 20, 60_000, now::get)) {
            registry.resolver((app, shuffle, map) -> {
                searches.incrementAndGet();
                searching.countDown();
                try {
                    diskAnswers.await();
                } catch (InterruptedException e) {
                    throw new IOException(e);
                }
                return new MapOutputRegistry.ResolvedOutput(OutputFile.trusted(file), new long[] {0, 1000, 3000}, null);
            });
            CompletableFuture<BlockDescriptor> first = CompletableFuture.supplyAsync(() -> registry.describe("app", 0, 1, 0, 1), threads);
            assertTrue(searching.await(10, TimeUnit.SECONDS), "the resolver was never asked");
            CompletableFuture<BlockDescriptor> second = CompletableFuture.supplyAsync(() -> registry.describe("app", 0, 1, 1, 2), threads);
            Thread.sleep(200); // the second request reaches the search under way
            assertFalse(second.isDone(), "the second request did not wait for the search under way");

            diskAnswers.countDown();
            BlockDescriptor a = first.get(10, TimeUnit.SECONDS);
            BlockDescriptor b = second.get(10, TimeUnit.SECONDS);
            assertEquals(1, searches.get(), "one search for both requests");
            assertEquals(1, registry.mapOutputs());
            assertEquals(1, registry.registrations(), "one registration for both requests");
            assertEquals(a.rkey(), b.rkey());
            assertEquals(a.address() + 1000, b.address());
        }
    }

    @Test
    void describeIfRegistered_answersWithoutSlowWork_orNull() throws IOException {
        Path file = dataFile("s.data", 4000);
        try (MapOutputRegistry registry = new MapOutputRegistry(pd, 1 << 20, 60_000, now::get)) {
            registry.register("app", 3, 1, file, new long[] {0, 0, 4000});
            assertNotNull(registry.describeIfRegistered("app", 3, 1, 0, 1), "an empty block needs no region");
            assertNull(registry.describeIfRegistered("app", 3, 1, 1, 2), "the file is not registered yet");
            assertEquals(0, registry.registrations());
            assertThrows(IllegalArgumentException.class, () -> registry.describeIfRegistered("app", 3, 1, 1, 3));
            assertThrows(NoSuchMapOutputException.class, () -> registry.describeIfRegistered("app", 3, 2, 0, 1),
                    "no resolver: an unknown output is an error at once");

            BlockDescriptor registered = registry.describe("app", 3, 1, 1, 2);
            assertEquals(registered, registry.describeIfRegistered("app", 3, 1, 1, 2));

            registry.resolver((app, shuffle, map) -> null);
            assertNull(registry.describeIfRegistered("app", 3, 2, 0, 1), "with a resolver, an unknown output needs a search");
            assertThrows(NoSuchMapOutputException.class, () -> registry.describe("app", 3, 2, 0, 1));
        }
    }

    /** The test's protection domain, except that registering a file of {@code slowLength} bytes waits until {@code proceed} opens. */
    private static final class SlowFileRegistrations implements ProtectionDomain {
        final ProtectionDomain pd;
        final long slowLength;
        final CountDownLatch registering = new CountDownLatch(1);
        final CountDownLatch proceed = new CountDownLatch(1);

        SlowFileRegistrations(ProtectionDomain pd, long slowLength) {
            this.pd = pd;
            this.slowLength = slowLength;
        }

        @Override
        public MemoryRegion registerFile(java.nio.channels.FileChannel file, long offset, long length, int access) {
            if (length != slowLength) {
                return pd.registerFile(file, offset, length, access);
            }
            registering.countDown();
            try {
                proceed.await();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
            return pd.registerFile(file, offset, length, access);
        }

        @Override
        public VerbsContext context() {
            return pd.context();
        }

        @Override
        public MemoryRegion register(java.lang.foreign.MemorySegment memory, int access) {
            return pd.register(memory, access);
        }

        @Override
        public MemoryRegion allocateAndRegister(long bytes, int access) {
            return pd.allocateAndRegister(bytes, access);
        }

        @Override
        public org.rdmashuffle.verbs.MemoryWindow allocateWindow(org.rdmashuffle.verbs.MemoryWindowType type) {
            return pd.allocateWindow(type);
        }

        @Override
        public org.rdmashuffle.verbs.SharedReceiveQueue createSharedReceiveQueue(int maxWr, int maxSge, int limit) {
            return pd.createSharedReceiveQueue(maxWr, maxSge, limit);
        }

        @Override
        public QueuePair createQueuePair(QueuePairConfig config) {
            return pd.createQueuePair(config);
        }

        @Override
        public void close() {
            // the test closes its own protection domain
        }
    }

    @Test
    void aSlowFileRegistration_holdsUpOnlyTheRequestsForThatOutput() throws Exception {
        Path small = dataFile("small.data", 1000);
        Path big = dataFile("big.data", 5000);
        SlowFileRegistrations registration = new SlowFileRegistrations(pd, 5000);
        try (MapOutputRegistry registry = new MapOutputRegistry(registration, 1 << 20, 60_000, now::get)) {
            registry.register("app", 0, 1, small, new long[] {0, 1000});
            registry.register("app", 0, 2, big, new long[] {0, 2000, 5000});
            BlockDescriptor one = registry.describe("app", 0, 1, 0, 1);
            CompletableFuture<BlockDescriptor> first = CompletableFuture.supplyAsync(() -> registry.describe("app", 0, 2, 0, 1), threads);
            assertTrue(registration.registering.await(10, TimeUnit.SECONDS), "map 2's file was never registered");
            CompletableFuture<BlockDescriptor> sameOutput = CompletableFuture.supplyAsync(() -> registry.describe("app", 0, 2, 1, 2), threads);

            // While map 2's file is being registered, the registry answers about everything else.
            assertEquals(one, CompletableFuture.supplyAsync(() -> registry.describe("app", 0, 1, 0, 1), threads)
                    .get(10, TimeUnit.SECONDS), "a registered output waited for another output's registration");
            assertNull(registry.describeIfRegistered("app", 0, 2, 0, 1), "map 2 is not registered yet");
            assertEquals(4096 + 8192, registry.registeredBytes(), "map 2's pages are reserved while it registers");
            assertFalse(first.isDone() || sameOutput.isDone());

            registration.proceed.countDown();
            BlockDescriptor a = first.get(10, TimeUnit.SECONDS);
            BlockDescriptor b = sameOutput.get(10, TimeUnit.SECONDS);
            assertEquals(2, registry.registrations(), "the second request for map 2 waited for the first's registration");
            assertEquals(a.rkey(), b.rkey());
            assertEquals(a.address() + 2000, b.address());
            assertEquals(a, registry.describeIfRegistered("app", 0, 2, 0, 1));
        }
    }

    @Test
    void anOutputForgottenWhileItsFileIsRegistered_givesItsRegionBack() throws Exception {
        Path file = dataFile("a.data", 3000);
        SlowFileRegistrations registration = new SlowFileRegistrations(pd, 3000);
        try (MapOutputRegistry registry = new MapOutputRegistry(registration, 1 << 20, 60_000, now::get)) {
            registry.register("app", 4, 1, file, new long[] {0, 3000});
            CompletableFuture<BlockDescriptor> describing = CompletableFuture.supplyAsync(() -> registry.describe("app", 4, 1, 0, 1), threads);
            assertTrue(registration.registering.await(10, TimeUnit.SECONDS), "the file was never registered");
            assertEquals(1, registry.unregisterApplication("app"));
            registration.proceed.countDown();

            java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> describing.get(10, TimeUnit.SECONDS));
            assertTrue(e.getCause() instanceof NoSuchMapOutputException, String.valueOf(e.getCause()));
            assertEquals(0, registry.registeredBytes(), "the reservation was given back");
            assertEquals(0, registry.registeredRegions());
            assertEquals(0, registry.mapOutputs());
        }
    }

    /** The block's bytes, read by RDMA_READ over a fresh pair of queue pairs. */
    private byte[] readRemotely(BlockDescriptor b) {
        try (CompletionQueue cq = context.createCompletionQueue(8, null, 0);
             QueuePair reducer = pd.createQueuePair(QueuePairConfig.of(cq, 8, 1, 1));
             QueuePair server = pd.createQueuePair(QueuePairConfig.of(cq, 8, 1, 1));
             MemoryRegion into = pd.allocateAndRegister(b.length(), Access.LOCAL_WRITE);
             SendWorkRequests chain = SendWorkRequests.allocate(1, 1);
             WorkCompletions wc = WorkCompletions.allocate(1)) {
            ConnectOptions o = device.options;
            reducer.connect(server.localEndpoint(o), o);
            server.connect(reducer.localEndpoint(o), o);
            chain.get(0).rdmaRead(1, SendFlags.SIGNALED, into, 0, (int) b.length(), b.address(), b.rkey());
            reducer.postSend(chain, 1);
            while (cq.poll(wc) == 0) {
                Thread.onSpinWait();
            }
            assertTrue(wc.isSuccess(0), () -> wc.failure(0).getMessage());
            return into.segment().asSlice(0, b.length()).toArray(ValueLayout.JAVA_BYTE);
        }
    }

    @Test
    void closingDuringARegistration_waitsForIt_andLeavesNothingRegistered() throws Exception {
        Path file = dataFile("a.data", 7000);
        SlowFileRegistrations registration = new SlowFileRegistrations(pd, 7000);
        MapOutputRegistry registry = new MapOutputRegistry(registration, 1 << 20, 60_000, now::get);
        registry.register("app", 2, 1, file, new long[] {0, 7000});
        CompletableFuture<BlockDescriptor> describing = CompletableFuture.supplyAsync(() -> registry.describe("app", 2, 1, 0, 1), threads);
        assertTrue(registration.registering.await(10, TimeUnit.SECONDS), "the file was never registered");
        CompletableFuture<Void> closing = CompletableFuture.runAsync(registry::close, threads);
        Thread.sleep(200);
        assertFalse(closing.isDone(), "close returned while a registration it cannot interrupt was under way");

        registration.proceed.countDown();
        closing.get(10, TimeUnit.SECONDS);
        java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> describing.get(10, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof IllegalStateException && e.getCause().getMessage().contains("closed"),
                String.valueOf(e.getCause()));
        assertEquals(0, registry.registeredBytes());
        assertEquals(0, registry.registeredRegions());
    }

    /** Makes {@code file} unwritable for this process: its mode bits, or for root (who ignores them) the immutable attribute. */
    private static boolean makeUnwritable(Path file) throws IOException, InterruptedException {
        if (!"root".equals(System.getProperty("user.name"))) {
            Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("r--r--r--"));
        } else if (new ProcessBuilder("chattr", "+i", file.toString()).redirectErrorStream(true).start().waitFor() != 0) {
            return false;
        }
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(file, java.nio.file.StandardOpenOption.WRITE)) {
            return false;
        } catch (IOException expected) {
            return true;
        }
    }

    private static void makeWritable(Path file) throws IOException, InterruptedException {
        if ("root".equals(System.getProperty("user.name"))) {
            new ProcessBuilder("chattr", "-i", file.toString()).redirectErrorStream(true).start().waitFor();
        }
        Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
    }

    /** Whether this is Linux before 6.2, which cannot register a read-only file mapping with a real device. */
    private static boolean kernelBefore62() {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("^(\\d+)\\.(\\d+)").matcher(System.getProperty("os.version"));
        return m.find() && Integer.parseInt(m.group(1)) * 100 + Integer.parseInt(m.group(2)) < 602;
    }

    @Test
    void aDataFileThisProcessMayNotWrite_isRegisteredReadOnly() throws Exception {
        Path file = dataFile("another-users.data", 6000);
        org.junit.jupiter.api.Assumptions.assumeTrue(makeUnwritable(file),
                "cannot make a file unwritable for this process here (root, and chattr +i refused)");
        try (MapOutputRegistry registry = new MapOutputRegistry(pd, 1 << 20, 60_000, now::get)) {
            registry.register("app", 1, 1, file, new long[] {0, 2500, 6000});
            boolean realDevice = "ibverbs".equals(System.getProperty("rdmashuffle.test.provider"));
            if (realDevice && kernelBefore62()) {
                // Linux < 6.2 pins registered pages for write: the error says so rather than failing obscurely.
                org.rdmashuffle.verbs.VerbsException e = assertThrows(org.rdmashuffle.verbs.VerbsException.class,
                        () -> registry.describe("app", 1, 1, 1, 2));
                assertTrue(e.getMessage().contains("cannot register a read-only file mapping"), e.getMessage());
                return;
            }
            BlockDescriptor b = registry.describe("app", 1, 1, 1, 2);
            assertEquals(3500, b.length());
            assertEquals(1, registry.registeredRegions());
            byte[] expected = java.util.Arrays.copyOfRange(Files.readAllBytes(file), 2500, 6000);
            assertArrayEquals(expected, readRemotely(b), "the block's bytes, read over the read-only registration");
        } finally {
            makeWritable(file);
        }
    }
}
