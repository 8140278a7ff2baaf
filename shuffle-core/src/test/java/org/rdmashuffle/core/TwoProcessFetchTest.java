package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.client.BlockFetchException;
import org.rdmashuffle.core.client.FetchedBlock;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.verbs.VerbsProvider;

/** The engine across two JVMs: the serving side is a separate process, which one test kills mid-fetch. */
class TwoProcessFetchTest {
    private static final int SHUFFLE = 9;

    @TempDir
    Path dir;

    /** A serving JVM ({@link ServingProcess}); closing it closes its stdin, and it exits. */
    private static final class Peer implements AutoCloseable {
        final Process process;
        final int port;

        Peer(Path dir, int port, int maps, int partitions, int maxPartitionBytes) throws IOException {
            Files.createDirectories(dir);
            List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Xmx256m", "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path")));
            // The parent's compiler flags too: the Soft-RoCE guest runs C1 only.
            java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                    .filter(a -> a.startsWith("-XX:TieredStopAtLevel")).forEach(cmd::add);
            for (String p : List.of("rdmashuffle.test.provider", "rdmashuffle.test.requireDevice")) {
                if (System.getProperty(p) != null) {
                    cmd.add("-D" + p + "=" + System.getProperty(p));
                }
            }
            cmd.addAll(List.of(ServingProcess.class.getName(), dir.toString(), Integer.toString(port), Integer.toString(SHUFFLE),
                    Integer.toString(maps), Integer.toString(partitions), Integer.toString(maxPartitionBytes)));
            process = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            String line;
            int found = -1;
            while ((line = out.readLine()) != null) {
                if (line.startsWith("READY ")) {
                    found = Integer.parseInt(line.substring(6).trim());
                    break;
                }
            }
            if (found < 0) {
                process.destroyForcibly();
                throw new IOException("the serving process exited before it was ready: " + process.onExit().join().exitValue());
            }
            this.port = found;
        }

        InetSocketAddress address() {
            return new InetSocketAddress("127.0.0.1", port);
        }

        @Override
        public void close() throws IOException {
            process.getOutputStream().close();
            try {
                if (!process.waitFor(20, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }

    private List<EngineTestSupport.MapOutput> expectedOutputs(int maps, int partitions, int maxPartitionBytes) throws IOException {
        Path mine = Files.createDirectories(dir.resolve("expected"));
        List<EngineTestSupport.MapOutput> outputs = new ArrayList<>();
        for (int m = 0; m < maps; m++) {
            outputs.add(EngineTestSupport.writeMapOutput(mine, SHUFFLE, m, partitions, maxPartitionBytes, 31L * SHUFFLE + m));
        }
        return outputs;
    }

    @Test
    void blocksFromAnotherProcess_arriveIntact() throws Exception {
        int maxPartition = EngineTestSupport.size(64 << 10);
        List<EngineTestSupport.MapOutput> outputs = expectedOutputs(4, 32, maxPartition);
        VerbsProvider provider = EngineTestSupport.provider();
        try (Peer peer = new Peer(dir.resolve("peer"), 0, 4, 32, maxPartition);
             RdmaShuffleEngine client = RdmaShuffleEngine.start(EngineTestSupport.smallConfig(), EngineTestSupport.APP,
                     EngineTestSupport.SECRET, provider)) {
            EngineTestSupport.fetchAllIntact(client, peer.address(), outputs);
        } finally {
            EngineTestSupport.assertNoConnectionsLeft(provider);
            EngineTestSupport.closeProvider(provider);
        }
    }

    @Test
    void peerProcessKilledMidFetch_failsTheAffectedBlocksNamingThePeer_andTheNextFetchReconnects() throws Exception {
        int maps = 8;
        int partitions = 16;
        int maxPartition = EngineTestSupport.size(256 << 10);
        List<EngineTestSupport.MapOutput> outputs = expectedOutputs(maps, partitions, maxPartition);
        EngineConfig slow = EngineTestSupport.smallConfig().set(EngineConfig.KEY_MAX_BYTES_IN_FLIGHT_PER_PEER, "512k")
                .set(EngineConfig.KEY_MAX_CHAINS_IN_FLIGHT_PER_PEER, "1").set(EngineConfig.KEY_CHAIN_LENGTH, "2");
        VerbsProvider provider = EngineTestSupport.provider();
        try (RdmaShuffleEngine client = RdmaShuffleEngine.start(slow, EngineTestSupport.APP, EngineTestSupport.SECRET, provider)) {
            Peer peer = new Peer(dir.resolve("peer"), 0, maps, partitions, maxPartition);
            int port = peer.port;
            List<BlockId> blocks = EngineTestSupport.everyPartition(outputs);
            AtomicBoolean killed = new AtomicBoolean();
            Collector got = new Collector(blocks.size()) {
                @Override
                public void onBlockFetched(FetchedBlock block) {
                    super.onBlockFetched(block);
                    if (killed.compareAndSet(false, true)) {
                        peer.process.destroyForcibly(); // SIGKILL: no goodbye to anyone
                    }
                }
            };
            client.fetchBlocks(peer.address(), blocks, got);
            got.await();
            assertTrue(peer.process.waitFor(20, TimeUnit.SECONDS));
            assertTrue(got.failed.size() > 0, "the kill came too late to fail anything: " + got.fetched.size() + " fetched");
            for (Map.Entry<BlockId, Throwable> f : got.failed.entrySet()) {
                BlockFetchException e = assertInstanceOf(BlockFetchException.class, f.getValue());
                assertTrue(e.getMessage().contains("127.0.0.1:" + port) && e.blocks().contains(f.getKey()), e.getMessage());
            }
            // What arrived before the kill is intact.
            Map<BlockId, byte[]> expected = EngineTestSupport.expected(outputs, new ArrayList<>(got.fetched.keySet()));
            for (Map.Entry<BlockId, byte[]> e : expected.entrySet()) {
                assertTrue(java.util.Arrays.equals(e.getValue(), got.fetched.get(e.getKey())), e.getKey() + " corrupted");
            }
            EngineTestSupport.assertNothingLeaks(client);
            EngineTestSupport.eventually("the dead peer's connection is gone", () -> client.counters().fetchConnections() == 0);

            // The peer comes back on the same port: the next fetch reconnects.
            try (Peer again = new Peer(dir.resolve("peer-again"), port, maps, partitions, maxPartition)) {
                List<BlockId> some = blocks.subList(0, 20);
                Collector second = new Collector(some.size());
                client.fetchBlocks(again.address(), some, second);
                second.await().assertAllIntact(EngineTestSupport.expected(outputs, some));
                assertEquals(1, client.counters().fetchConnections());
                EngineTestSupport.assertNothingLeaks(client);
            }
        } finally {
            EngineTestSupport.closeProvider(provider);
        }
    }
}
