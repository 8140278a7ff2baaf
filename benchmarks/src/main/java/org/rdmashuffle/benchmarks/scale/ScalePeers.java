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
 * its own: its own control address and queue pairs), has each fetch every partition of the serving
 * engine's output once and check the bytes, prints {@code CONNECTED <peers> <set-up ms of each, sorted>},
 * keeps every connection open while the serving JVM is measured, and closes them all on {@code exit}.
 *
 * <pre>ScalePeers SERVER_PORT COUNT</pre>
 */
public final class ScalePeers {
    private ScalePeers() {
    }

    public static void main(String[] args) throws Exception {
        InetSocketAddress server = new InetSocketAddress("127.0.0.1", Integer.parseInt(args[0]));
        int count = Integer.parseInt(args[1]);
        List<RdmaShuffleEngine> engines = new ArrayList<>();
        // A software device per engine, as each executor (a JVM of its own) has: the process-wide one would
        // carry every engine of this JVM over one link to the server, which no real peer does.
        List<SoftwareProvider> devices = new ArrayList<>();
        long[] setUpMillis = new long[count];
        try {
            List<CompletableFuture<Long>> fetched = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                SoftwareProvider device = new SoftwareProvider(SoftwareProvider.Config.loopback());
                devices.add(device);
                RdmaShuffleEngine e = RdmaShuffleEngine.start(peerConfig(), PeerScaleBenchmark.APP, PeerScaleBenchmark.SECRET, device);
                engines.add(e);
                fetched.add(fetchAll(e, server));
            }
            for (int i = 0; i < count; i++) {
                setUpMillis[i] = fetched.get(i).get(5, TimeUnit.MINUTES);
            }
            Arrays.sort(setUpMillis);
            StringBuilder line = new StringBuilder("CONNECTED " + count);
            for (long ms : setUpMillis) {
                line.append(' ').append(ms);
            }
            System.out.println(line);
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String l = in.readLine(); l != null && !l.equals("exit"); l = in.readLine()) {
                // wait for the serving JVM to be measured
            }
        } finally {
            engines.forEach(RdmaShuffleEngine::close);
            devices.forEach(SoftwareProvider::close);
        }
    }

    /** A peer's engine made small: one queue pair per peer, few buffers, the smallest fetch pool. */
    static EngineConfig peerConfig() {
        return EngineConfig.defaults().set(EngineConfig.KEY_PROVIDER, "software")
                .set(EngineConfig.KEY_BIND_ADDRESS, "127.0.0.1").set(EngineConfig.KEY_QPS_PER_PEER, "1")
                .set(EngineConfig.KEY_RECEIVE_BUFFERS, "16").set(EngineConfig.KEY_RECEIVE_LOW_WATER, "4")
                .set(EngineConfig.KEY_SEND_BUFFERS, "8").set(EngineConfig.KEY_FETCH_BUFFER_MEMORY, "1m")
                .set(EngineConfig.KEY_SERVER_THREADS, "1").set(EngineConfig.KEY_CONTROL_CLIENT_THREADS, "1")
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
