package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.client.BlockFetchException;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.metrics.EngineMetrics;
import org.rdmashuffle.core.metrics.Refusal;
import org.rdmashuffle.core.protocol.BlockId;

/**
 * A serving engine whose map outputs are twenty times its {@code registeredMemoryLimit} (issue 52,
 * "outgrowing registered memory", at the size CI affords): two outputs fit at once. A region is
 * deregistered to make room only when no reducer may be reading it: outside its lease ({@code
 * fetchTimeout} of the serving engine) and, for reducers that speak control protocol version 5, once
 * the connections it was described to in held answers released it (docs/compatibility.md).
 */
class RegisteredMemoryLimitTest {
    /** Forty outputs of these partition sizes (some empty), each 2 MiB of pages: two fit 4 MiB, three do not. */
    private static final int[] PARTITIONS = {200_000, 0, 262_144, 300_000, 1, 333_333, 250_000, 750_000};
    private static final int OUTPUTS = 40;

    @TempDir
    Path dir;

    private static long limit() {
        return EngineTestSupport.size(4 << 20);
    }

    private static EngineConfig server(String lease) {
        return EngineTestSupport.smallConfig().set(EngineConfig.KEY_REGISTERED_MEMORY_LIMIT, Long.toString(limit()))
                .set(EngineConfig.KEY_FETCH_TIMEOUT, lease);
    }

    private EnginePair pair(EngineConfig serverConfig) throws Exception {
        EnginePair pair = new EnginePair(serverConfig, EngineTestSupport.SECRET, EngineTestSupport.smallConfig(),
                EngineTestSupport.SECRET);
        int[] sizes = new int[PARTITIONS.length];
        for (int p = 0; p < sizes.length; p++) {
            sizes[p] = PARTITIONS[p] == 0 ? 0 : Math.max(1, EngineTestSupport.size(PARTITIONS[p]));
        }
        long pinned = 0;
        for (int m = 0; m < OUTPUTS; m++) {
            EngineTestSupport.MapOutput o = EngineTestSupport.writeMapOutput(dir, 1, m, sizes, 7L * m + 1);
            pair.server.registerMapOutput(1, m, o.file(), o.offsets());
            pair.outputs.add(o);
            pinned = (o.data().length + 4095L) / 4096 * 4096;
        }
        assertTrue(2 * pinned <= limit() && 3 * pinned > limit(), "two outputs fit the limit, three do not: " + pinned);
        assertEquals(20 * limit(), OUTPUTS * pinned, "the outputs are twenty times the limit");
        return pair;
    }

    /**
     * The reducer reads two outputs at a time (what fits), the next two once the server's lease on
     * those ended; then the first two again. Every block arrives intact, registered memory never
     * exceeds the limit, and the work of registering again is counted: each output registered once per
     * time it was read after leaving, each region that made room counted as an eviction.
     */
    @Test
    void outputsTwentyTimesTheLimit_areAllServed_eachRegisteredAgainOnceEvicted() throws Exception {
        long leaseMillis = 150;
        try (EnginePair pair = pair(server(leaseMillis + "ms"))) {
            List<List<EngineTestSupport.MapOutput>> waves = new ArrayList<>();
            for (int m = 0; m < OUTPUTS; m += 2) {
                waves.add(pair.outputs.subList(m, m + 2));
            }
            waves.add(waves.getFirst()); // evicted long ago: registered again
            for (List<EngineTestSupport.MapOutput> wave : waves) {
                EngineTestSupport.fetchAllIntact(pair.client, pair.server.address(), wave);
                long registered = pair.server.counters().registeredMapOutputBytes();
                assertTrue(registered > 0 && registered <= limit(), registered + " bytes registered, limit " + limit());
                Thread.sleep(leaseMillis + 100); // the last description of these outputs is older than the lease
            }
            EngineMetrics served = pair.server.metrics();
            assertEquals(0, served.served().refused(), "nothing refused: " + served.served());
            assertEquals(OUTPUTS + 2, served.mapOutputRegistrations().count(), "each output once, the first two twice");
            assertEquals(OUTPUTS + 2 - 2, served.mapOutputRegistrations().evictions(),
                    "every registration beyond the two that fit evicted one region");
            long dataBytes = pair.outputs.stream().mapToLong(o -> o.data().length).sum();
            assertEquals(dataBytes + pair.outputs.get(0).data().length + pair.outputs.get(1).data().length,
                    served.mapOutputRegistrations().bytes(), "bytes registered, those registered again included");
            assertEquals(0, served.mapOutputRegistrations().failures());
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    /**
     * The reducer asks for every block of the forty outputs at once, within one lease: only two outputs'
     * regions fit. Both ends speak control protocol version 5, so the answers are held: the server
     * describes what fits (the first blocks of a request), the reducer reads them and releases their
     * outputs, and the server deregisters those to register the next -- long before the lease (20 s)
     * ends. Every block arrives intact, nothing is refused, registered memory never exceeds the limit,
     * and the churn is counted: each output registered once, all but the two that fit evicting one.
     */
    @Test
    void readingMoreThanFitsWithinOneLease_servesEveryBlock_releasingEachOutputOnceRead() throws Exception {
        try (EnginePair pair = pair(server("20s"))) {
            long started = System.nanoTime();
            EngineTestSupport.fetchAllIntact(pair.client, pair.server.address(), pair.outputs);
            long tookMillis = (System.nanoTime() - started) / 1_000_000;
            assertTrue(tookMillis < 20_000, "served within one lease, not by waiting for leases to end: " + tookMillis + " ms");
            EngineMetrics server = pair.server.metrics();
            assertEquals(0, server.served().refused(), "nothing refused: " + server.served());
            assertEquals(OUTPUTS, server.mapOutputRegistrations().count(), "each output registered once");
            assertEquals(OUTPUTS - 2, server.mapOutputRegistrations().evictions(), "all but the two that fit evicted one");
            assertTrue(pair.server.counters().registeredMapOutputBytes() <= limit());
            assertEquals(1, pair.client.counters().fetchConnections(), "one connection did it all");
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    /**
     * The same, for a reducer of a release before held answers (control protocol version 3, through a
     * relay speaking it): outputs described to it stay registered for the whole lease, so the blocks of
     * outputs that find no room are refused by name (REFUSED: the adapters fetch them over their own
     * transport), counted as such on the server; no wrong byte, no failed connection, nothing evicted.
     */
    @Test
    void aReducerOfAReleaseBeforeHeldAnswers_readingMoreThanFitsWithinOneLease_isRefusedTheRestByName() throws Exception {
        try (EnginePair pair = pair(server("20s"));
             org.rdmashuffle.core.control.ReleaseRelay previous = org.rdmashuffle.core.control.ReleaseRelay
                     .previousReleaseClient(pair.server.address(), EngineTestSupport.APP, EngineTestSupport.SECRET)) {
            List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
            Collector got = new Collector(blocks.size());
            pair.client.fetchBlocks(previous.address(), blocks, got);
            got.await();
            Map<BlockId, byte[]> expected = EngineTestSupport.expected(pair.outputs, blocks);
            Set<Long> servedOutputs = new HashSet<>();
            long refusedNonEmpty = 0;
            for (BlockId b : blocks) {
                byte[] bytes = got.fetched.get(b);
                Throwable why = got.failed.get(b);
                if (bytes != null) {
                    assertTrue(java.util.Arrays.equals(expected.get(b), bytes), b + ": wrong bytes");
                    if (bytes.length > 0) {
                        servedOutputs.add(b.mapId());
                    }
                } else {
                    assertTrue(why instanceof BlockFetchException e && e.kind() == BlockFetchException.Kind.REFUSED
                            && e.getMessage().contains(b + ": the server's registered memory is exhausted"), b + ": " + why);
                    refusedNonEmpty++;
                }
            }
            assertEquals(2, servedOutputs.size(), "the outputs whose regions fit: " + servedOutputs);
            assertTrue(refusedNonEmpty > 0, "nothing refused");
            EngineMetrics server = pair.server.metrics();
            assertEquals(refusedNonEmpty, server.served().refusals().get(Refusal.REGISTERED_MEMORY_EXHAUSTED));
            assertEquals(0, server.mapOutputRegistrations().evictions(), "nothing was outside its lease");
            assertTrue(pair.server.counters().registeredMapOutputBytes() <= limit());
            assertEquals(1, pair.client.counters().fetchConnections(), "the refusals did not cost the connection");
        }
    }
}
