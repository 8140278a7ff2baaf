package org.rdmashuffle.hadoop;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.client.BlockFetchException;
import org.rdmashuffle.core.client.BlockFetchListener;
import org.rdmashuffle.core.client.FetchedBlock;
import org.rdmashuffle.core.config.EngineConfig;

/** A reduce task's engine, on the software provider, authenticated for {@code app} with {@code secret}. */
final class TestReducer implements AutoCloseable {
    /** What one block's fetch came to: its bytes and raw length, or the failure. */
    record Result(byte[] bytes, long rawLength, Throwable failure) {
        /** Refused by the service at the handshake: it was reached and would not authenticate us. */
        boolean refused() {
            return failure != null
                    && BlockFetchException.kindOf(failure) == BlockFetchException.Kind.NOT_AUTHENTICATED;
        }

        /** The service answered that it has no such map output. */
        boolean noSuchOutput() {
            return failure != null && BlockFetchException.kindOf(failure) == BlockFetchException.Kind.NO_SUCH_OUTPUT;
        }
    }

    private final RdmaShuffleEngine engine;

    TestReducer(String app, byte[] secret) {
        EngineConfig c = EngineConfig.defaults().set(EngineConfig.KEY_PROVIDER, "software")
                .set(EngineConfig.KEY_FETCH_BUFFER_MEMORY, "16m").set(EngineConfig.KEY_CONNECT_TIMEOUT, "5s");
        engine = RdmaShuffleEngine.start(c, app, secret);
    }

    /** Partition {@code partition} of map attempt {@code map}'s output, from the service at {@code service}. */
    Result fetch(InetSocketAddress service, TaskAttemptID map, int partition) throws Exception {
        return fetch(service, BlockId.of(MapReduceIds.SHUFFLE, MapReduceIds.mapId(map), partition));
    }

    /** One block from the service at {@code service}. */
    Result fetch(InetSocketAddress service, BlockId block) throws Exception {
        CompletableFuture<Result> got = new CompletableFuture<>();
        engine.fetchBlocks(service, List.of(block), new BlockFetchListener() {
            @Override
            public void onBlockFetched(FetchedBlock b) {
                // Off the poller: a block read in pieces streams them as they land.
                Thread.ofVirtual().start(() -> {
                    try (java.io.InputStream in = b.openStream()) {
                        got.complete(new Result(in.readAllBytes(), b.rawLength(), null));
                    } catch (java.io.IOException e) {
                        got.complete(new Result(null, -1, e));
                    } finally {
                        b.release();
                    }
                });
            }

            @Override
            public void onBlockFetchFailure(BlockId b, Throwable cause) {
                got.complete(new Result(null, -1, cause));
            }
        });
        Result r = got.get(60, TimeUnit.SECONDS);
        assertTrue(r != null, "no answer for " + block);
        return r;
    }

    @Override
    public void close() {
        engine.close();
    }
}
