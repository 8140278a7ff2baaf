package org.rdmashuffle.core.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
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
import org.rdmashuffle.core.TestDevice;

/** Map outputs registered over their files, described as blocks a peer can read, within a memory limit. */
class MapOutputRegistryTest {
    private static final long SECOND = 1_000_000_000L;

    @TempDir
    Path dir;
    private TestDevice device;
    private VerbsContext context;
    private ProtectionDomain pd;
    private final AtomicLong now = new AtomicLong(100 * SECOND);

    @BeforeEach
    void open() {
        device = TestDevice.open();
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
        try (MapOutputRegistry registry = new MapOutputRegistry(pd, 1 << 20, 60_000, now::get);
             CompletionQueue cq = context.createCompletionQueue(8, null, 0);
             QueuePair reducer = pd.createQueuePair(QueuePairConfig.of(cq, 8, 1, 1));
             QueuePair server = pd.createQueuePair(QueuePairConfig.of(cq, 8, 1, 1));
             MemoryRegion into = pd.allocateAndRegister(10_000, Access.LOCAL_WRITE);
             SendWorkRequests chain = SendWorkRequests.allocate(1, 1);
             WorkCompletions wc = WorkCompletions.allocate(1)) {
            registry.register(1, 7, file, new long[] {0, 1000, 1000, 6000, 10_000});
            ConnectOptions o = device.options;
            reducer.connect(server.localEndpoint(o), o);
            server.connect(reducer.localEndpoint(o), o);

            BlockDescriptor b = registry.describe(1, 7, 2, 4); // partitions 2 and 3: bytes [1000, 10000)
            assertEquals(9000, b.length());
            chain.get(0).rdmaRead(1, SendFlags.SIGNALED, into, 0, (int) b.length(), b.address(), b.rkey());
            reducer.postSend(chain, 1);
            while (cq.poll(wc) == 0) {
                Thread.onSpinWait();
            }
            assertTrue(wc.isSuccess(0), () -> wc.failure(0).getMessage());
            byte[] expected = Arrays.copyOfRange(Files.readAllBytes(file), 1000, 10_000);
            assertArrayEquals(expected, into.segment().asSlice(0, 9000).toArray(ValueLayout.JAVA_BYTE));
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

    @Test
    void theLimitReleasesTheLeastRecentlyDescribedOutsideTheirLease() throws IOException {
        try (MapOutputRegistry registry = new MapOutputRegistry(pd, 10_000, 1_000, now::get)) {
            registry.register(1, 1, dataFile("1.data", 6000), new long[] {0, 6000});
            registry.register(1, 2, dataFile("2.data", 6000), new long[] {0, 6000});
            registry.describe(1, 1, 0, 1);
            RegisteredMemoryExhaustedException busy = assertThrows(RegisteredMemoryExhaustedException.class,
                    () -> registry.describe(1, 2, 0, 1));
            assertTrue(busy.getMessage().contains("limit of 10000 bytes: 6000 bytes are registered"), busy.getMessage());
            now.addAndGet(2 * SECOND); // output 1's lease has run out
            registry.describe(1, 2, 0, 1);
            assertEquals(1, registry.registeredRegions());
            assertEquals(6000, registry.registeredBytes());
            now.addAndGet(2 * SECOND);
            registry.describe(1, 1, 0, 1); // registered again on demand
            assertEquals(3, registry.registrations());
        }
    }

    @Test
    void anOutputLargerThanTheLimitIsRefusedWithTheNumbers() throws IOException {
        try (MapOutputRegistry registry = new MapOutputRegistry(pd, 1000, 1_000, now::get)) {
            registry.register(3, 9, dataFile("big.data", 5000), new long[] {0, 5000});
            RegisteredMemoryExhaustedException e = assertThrows(RegisteredMemoryExhaustedException.class,
                    () -> registry.describe(3, 9, 0, 1));
            assertEquals("map output 9 of shuffle 3 has 5000 bytes, more than the registered-memory limit of 1000", e.getMessage());
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
        assertEquals(2000, registry.registeredBytes());
        assertEquals(1, registry.mapOutputs());
        registry.close();
        assertEquals(0, registry.registeredBytes());
        assertEquals(0, registry.registeredRegions());
        assertThrows(IllegalStateException.class, () -> registry.describe(2, 1, 0, 1));
    }
}
