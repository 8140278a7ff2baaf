package org.rdmashuffle.spark;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import org.apache.spark.network.shuffle.BlockFetchingListener;
import org.apache.spark.network.shuffle.BlockStoreClient;
import org.apache.spark.network.shuffle.DownloadFileManager;
import org.apache.spark.network.shuffle.checksum.Cause;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.client.BlockFetchException;
import org.rdmashuffle.core.client.BlockFetchListener;
import org.rdmashuffle.core.client.FetchedBlock;

/**
 * The block store client Spark's fetch iterator uses in an RDMA reader: remote shuffle blocks of an
 * executor that serves them by RDMA are fetched by the engine, and the listener is called from the
 * engine's completion poller; everything else (executors without an engine, corruption diagnosis,
 * host-local directories) goes to Spark's own client.
 */
final class RdmaBlockStoreClient extends BlockStoreClient {
    private final EngineShuffleManager manager;
    private final RdmaShuffleEngine engine;
    private final Map<String, InetSocketAddress> engines;
    private final BlockStoreClient builtIn;

    /** @param engines where each executor's engine listens, by executor id (from the map output locations) */
    RdmaBlockStoreClient(EngineShuffleManager manager, RdmaShuffleEngine engine, Map<String, InetSocketAddress> engines,
                         BlockStoreClient builtIn) {
        this.manager = manager;
        this.engine = engine;
        this.engines = engines;
        this.builtIn = builtIn;
    }

    /**
     * A client for these engine locations: {@code last} when it was made for the same ones (the reduce
     * tasks of a stage see the same executors), else a new one. Spark's {@code BlockStoreClient} makes
     * a logger per instance, about 1.5% of the reduce tasks' profile samples at 1,000 reducers (JFR,
     * docs/benchmarks.md); the client keeps no state of its own between calls, so tasks may share it.
     */
    static RdmaBlockStoreClient reuseOrMake(RdmaBlockStoreClient last, EngineShuffleManager manager, RdmaShuffleEngine engine,
                                            Map<String, InetSocketAddress> engines, BlockStoreClient builtIn) {
        // last is manager's own (EngineShuffleManager.blockStoreClient): only what a task brings is compared.
        if (last != null && last.engine == engine && last.builtIn == builtIn && last.engines.equals(engines)) {
            return last;
        }
        return new RdmaBlockStoreClient(manager, engine, Map.copyOf(engines), builtIn);
    }

    @Override
    public void fetchBlocks(String host, int port, String execId, String[] blockIds, BlockFetchingListener listener,
                            DownloadFileManager downloadFileManager) {
        InetSocketAddress peer = engine == null ? null : engines.get(execId);
        if (peer == null) {
            manager.counts.fellBack(engine == null ? FallbackReason.ENGINE_UNAVAILABLE : FallbackReason.PEER_WITHOUT_ENGINE,
                    blockIds.length);
            builtIn.fetchBlocks(host, port, execId, blockIds, countingFallback(listener), downloadFileManager);
            return;
        }
        List<BlockId> ids = new ArrayList<>(blockIds.length);
        Map<BlockId, String> names = new HashMap<>();
        for (String name : blockIds) {
            BlockId id = parse(name);
            if (id == null) {
                listener.onBlockFetchFailure(name, new IllegalArgumentException(name + " is not a shuffle block"));
                continue;
            }
            ids.add(id);
            names.put(id, name);
        }
        engine.fetchBlocks(peer, ids, new BlockFetchListener() {
            @Override
            public void onBlockFetched(FetchedBlock block) {
                manager.counts.fetchedOverRdma(peer, block.size());
                FetchedBlockManagedBuffer buffer = new FetchedBlockManagedBuffer(block);
                try {
                    listener.onBlockFetchSuccess(names.get(block.id()), buffer); // Spark retains what it keeps
                } finally {
                    buffer.release();
                }
            }

            @Override
            public void onBlockFetchFailure(BlockId block, Throwable cause) {
                String name = names.get(block);
                BlockFetchException.Kind kind = BlockFetchException.kindOf(cause);
                if (manager.fetchesOverSparkInstead(kind)) {
                    // RDMA cannot carry this block (see fetchesOverSparkInstead); Spark's transport can,
                    // from another thread: this is the engine's completion poller.
                    manager.counts.fellBack(reasonOf(kind), 1);
                    BlockFetchingListener counting = countingFallback(listener);
                    Exception rejected = manager.fallbacks.submit(() -> {
                        try {
                            builtIn.fetchBlocks(host, port, execId, new String[] {name}, counting, downloadFileManager);
                        } catch (RuntimeException e) {
                            counting.onBlockFetchFailure(name, e);
                        }
                    });
                    if (rejected != null) {
                        cause.addSuppressed(rejected);
                        listener.onBlockFetchFailure(name, cause);
                    }
                    return;
                }
                // A FetchFailed for it follows: Spark will run its map again, so its layout is not to be trusted.
                engine.forgetOutput(block.shuffleId(), block.mapId());
                listener.onBlockFetchFailure(name, cause);
            }
        });
    }

    /** Counts the bytes Spark's transport delivers in our stead (what the carriers report and TPC-DS records). */
    private BlockFetchingListener countingFallback(BlockFetchingListener listener) {
        return new BlockFetchingListener() {
            @Override
            public void onBlockFetchSuccess(String blockId, org.apache.spark.network.buffer.ManagedBuffer data) {
                manager.counts.deliveredByFallback(data.size());
                listener.onBlockFetchSuccess(blockId, data);
            }

            @Override
            public void onBlockFetchFailure(String blockId, Throwable cause) {
                listener.onBlockFetchFailure(blockId, cause);
            }
        };
    }

    /**
     * A shuffle block's name as Spark writes it ({@code shuffle_<shuffle>_<map>_<reduce>}, or
     * {@code shuffle_<shuffle>_<map>_<start>_<end>} for a batch), read by hand: Spark's own parser runs
     * a regular expression per block. Null for anything else.
     */
    static BlockId parse(String name) {
        if (!name.startsWith("shuffle_")) {
            return null;
        }
        long[] n = new long[4];
        int count = 0;
        int at = "shuffle_".length();
        while (count < n.length && at < name.length()) {
            int end = name.indexOf('_', at);
            end = end < 0 ? name.length() : end;
            long v = 0;
            if (end == at || end - at > 19) {
                return null;
            }
            for (int k = at; k < end; k++) {
                char c = name.charAt(k);
                if (c < '0' || c > '9') {
                    return null;
                }
                v = v * 10 + (c - '0');
            }
            if (v < 0) {
                return null; // overflowed
            }
            n[count++] = v;
            at = end + 1;
        }
        // Every character taken (the last number ended the name), and three or four numbers.
        if (at != name.length() + 1 || count < 3 || n[0] > Integer.MAX_VALUE || n[2] > Integer.MAX_VALUE || n[3] > Integer.MAX_VALUE) {
            return null;
        }
        try {
            return count == 3 ? BlockId.of((int) n[0], n[1], (int) n[2]) : new BlockId((int) n[0], n[1], (int) n[2], (int) n[3]);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    @Override
    public Cause diagnoseCorruption(String host, int port, String execId, int shuffleId, long mapId, int reduceId,
                                    long checksum, String algorithm) {
        // The serving executor's block server recomputes the checksum from its file.
        return builtIn.diagnoseCorruption(host, port, execId, shuffleId, mapId, reduceId, checksum, algorithm);
    }

    @Override
    public void getHostLocalDirs(String host, int port, String[] execIds, CompletableFuture<Map<String, String[]>> dirs) {
        builtIn.getHostLocalDirs(host, port, execIds, dirs);
    }

    @Override
    public void close() {
        // Owns nothing: the engine and Spark's client live as long as their executor.
    }

    /** The reason a block the engine could not fetch is counted under. */
    private static FallbackReason reasonOf(org.rdmashuffle.core.client.BlockFetchException.Kind kind) {
        return switch (kind) {
            case UNREACHABLE -> FallbackReason.UNREACHABLE;
            case NOT_AUTHENTICATED -> FallbackReason.NOT_AUTHENTICATED;
            default -> FallbackReason.REFUSED;
        };
    }
}
