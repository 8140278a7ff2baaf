package org.rdmashuffle.benchmarks.scale;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.client.BlockFetchListener;
import org.rdmashuffle.core.client.FetchedBlock;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.software.SoftwareProvider;

/**
 * A JVM of fetching peers for {@link PeerScaleBenchmark}: starts {@code count} engines (each a peer of
 * its own: its own software device, control address, control connection and queue pair, all on
 * {@code BIND_ADDRESS}), has each fetch every partition of the serving engine's output once and check
 * the bytes once told {@code go} (after printing {@code STARTED <peers>}), prints {@code CONNECTED <peers> <first ask, epoch ms> <last block, epoch ms> <set-up ms of
 * each, sorted>}, keeps every connection open while the serving JVM is measured, and closes them all on
 * {@code exit}. Each JVM of a round binds its peers to a loopback address of its own (127.1.0.x): a peer
 * engine listens on two ports (control plane, software device), so 10,000 peers on one address would
 * take 20,000 of its 28,232 ephemeral ports.
 *
 * <pre>ScalePeers SERVER_PORT COUNT BIND_ADDRESS</pre>
 */
public final class ScalePeers {
    private ScalePeers() {
    }

    public static void main(String[] args) throws Exception {
        InetSocketAddress server = new InetSocketAddress("127.0.0.1", Integer.parseInt(args[0]));
        int count = Integer.parseInt(args[1]);
        String bindAddress = args[2];
        // Thousands of engines each log their start line; warnings and failures still show.
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
        List<RdmaShuffleEngine> engines = new ArrayList<>();
        // A software device per engine, as each executor (a JVM of its own) has: the process-wide one would
        // carry every engine of this JVM over one link to the server, which no real peer does.
        List<SoftwareProvider> devices = new ArrayList<>();
        long[] setUpMillis = new long[count];
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try {
            for (int i = 0; i < count; i++) {
                SoftwareProvider device = new SoftwareProvider(new SoftwareProvider.Config(
                        java.net.InetAddress.getByName(bindAddress), 0, SoftwareProvider.Config.loopback().admission()));
                devices.add(device);
                RdmaShuffleEngine e = RdmaShuffleEngine.start(peerConfig(bindAddress), PeerScaleBenchmark.APP, PeerScaleBenchmark.SECRET, device);
                engines.add(e);
            }
            // Every peer of every JVM asks at once, as a reduce stage's tasks do: what is timed is the serving
            // engine setting up a burst of peers, not these JVMs starting engines one after another.
            System.out.println("STARTED " + count);
            System.out.flush();
            for (String l = in.readLine(); l == null || !l.equals("go"); l = in.readLine()) {
                if (l == null) {
                    return;
                }
            }
            long firstAsk = System.currentTimeMillis();
            List<CompletableFuture<Long>> fetched = new ArrayList<>();
            for (RdmaShuffleEngine e : engines) {
                fetched.add(fetchAll(e, server));
            }
            for (int i = 0; i < count; i++) {
                setUpMillis[i] = fetched.get(i).get(5, TimeUnit.MINUTES);
            }
            long lastBlock = System.currentTimeMillis();
            Arrays.sort(setUpMillis);
            StringBuilder line = new StringBuilder("CONNECTED " + count + " " + firstAsk + " " + lastBlock);
            for (long ms : setUpMillis) {
                line.append(' ').append(ms);
            }
            System.out.println(line);
            System.out.flush();
            for (String l = in.readLine(); l != null && !l.equals("exit"); l = in.readLine()) {
                // wait for the serving JVM to be measured
            }
        } finally {
            engines.forEach(RdmaShuffleEngine::close);
            devices.forEach(SoftwareProvider::close);
        }
    }

    /**
     * A peer's engine made as small as the configuration allows, so that thousands fit one machine:
     * one queue pair per peer, the fewest receive and send buffers, 4 KiB receive buffers (the server's
     * answer to 8 blocks, with their layout, is a few hundred bytes), the smallest fetch pool and layout
     * budget, one thread wherever a count of threads is set, fetch calls made on the caller's thread (no
     * submitter thread), and an idle timeout longer than a round (a peer that set up early must still be
     * connected when the serving JVM is measured, minutes later at 10,000 peers).
     */
    static EngineConfig peerConfig(String bindAddress) {
        return EngineConfig.defaults().set(EngineConfig.KEY_PROVIDER, "software")
                .set(EngineConfig.KEY_BIND_ADDRESS, bindAddress).set(EngineConfig.KEY_QPS_PER_PEER, "1")
                .set(EngineConfig.KEY_RECEIVE_BUFFERS, "2").set(EngineConfig.KEY_RECEIVE_LOW_WATER, "0")
                .set(EngineConfig.KEY_RECEIVE_BUFFER_SIZE, "4k")
                .set(EngineConfig.KEY_SEND_BUFFERS, "2").set(EngineConfig.KEY_FETCH_BUFFER_MEMORY, "1m")
                .set(EngineConfig.KEY_LAYOUT_CACHE_MEMORY, "64k")
                .set(EngineConfig.KEY_POLLER_THREADS, "1").set(EngineConfig.KEY_SERVER_THREADS, "1")
                .set(EngineConfig.KEY_CONTROL_CLIENT_THREADS, "1").set(EngineConfig.KEY_HAND_OFF_FETCHES, "false")
                .set(EngineConfig.KEY_IDLE_TIMEOUT, "1h").set(EngineConfig.KEY_CONNECT_TIMEOUT, "120s")
                .set(EngineConfig.KEY_BUSY_POLL, "0s");
    }

    /** Fetches every partition of the server's output; completes with the milliseconds from ask to last block. */
    private static CompletableFuture<Long> fetchAll(RdmaShuffleEngine e, InetSocketAddress server) {
        CompletableFuture<Long> done = new CompletableFuture<>();
        List<BlockId> blocks = new ArrayList<>();
        for (int p = 0; p < PeerScaleBenchmark.PARTITIONS; p++) {
            blocks.add(BlockId.of(PeerScaleBenchmark.SHUFFLE, PeerScaleBenchmark.MAP, p));
        }
        long t0 = System.nanoTime();
        java.util.concurrent.atomic.AtomicInteger left = new java.util.concurrent.atomic.AtomicInteger(blocks.size());
        e.fetchBlocks(server, blocks, new BlockFetchListener() {
            @Override
            public void onBlockFetched(FetchedBlock block) {
                try {
                    byte[] got = new byte[(int) block.size()];
                    block.asByteBuffer().get(got);
                    if (!Arrays.equals(got, PeerScaleBenchmark.partition(block.id().startPartition()))) {
                        done.completeExceptionally(new IllegalStateException(block.id() + " arrived with other bytes"));
                    }
                } finally {
                    block.release();
                }
                if (left.decrementAndGet() == 0) {
                    done.complete((System.nanoTime() - t0) / 1_000_000);
                }
            }

            @Override
            public void onBlockFetchFailure(BlockId block, Throwable cause) {
                done.completeExceptionally(cause);
            }
        });
        return done;
    }
}
