package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.client.BlockFetchListener;
import org.rdmashuffle.core.client.FetchedBlock;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.transport.DataConnection;

/**
 * {@code handOffFetches}: a fetch call's requests and reads are made on the engine's submitter thread,
 * so a reduce task's call (which Spark counts as fetch wait) does not make them; and a call still
 * waiting for that thread when the engine closes fails its blocks, never loses them.
 */
class FetchHandOffTest {
    private static final int[] SIZES = {5000, 0, 7000, 100};

    @TempDir
    Path dir;

    private static EnginePair pair(boolean handOff) {
        EngineConfig client = EngineTestSupport.smallConfig().set(EngineConfig.KEY_HAND_OFF_FETCHES, Boolean.toString(handOff));
        return new EnginePair(EngineTestSupport.smallConfig(), EngineTestSupport.SECRET, client, EngineTestSupport.SECRET);
    }

    /** The threads that sent the client's FetchRequests. */
    private static List<Thread> requestSenders(EnginePair pair) {
        List<Thread> senders = new CopyOnWriteArrayList<>();
        pair.client.tamper(new RdmaShuffleEngine.Tamper() {
            @Override
            public Message message(DataConnection.Role role, Message m) {
                if (m instanceof Message.FetchRequest) {
                    senders.add(Thread.currentThread());
                }
                return m;
            }
        });
        return senders;
    }

    /**
     * Writes and registers outputs (1, 0) and (1, 1) and fetches block 0 of each (their layouts are
     * cached after): {@code senders} then holds the thread each request went from, the first a
     * dialer's (which sets the connection up and then makes the call), the second the one to check.
     */
    private void touchTwoOutputs(EnginePair pair, List<Thread> senders, long seed) throws Exception {
        EngineTestSupport.MapOutput[] o = new EngineTestSupport.MapOutput[2];
        for (int m = 0; m < 2; m++) {
            o[m] = EngineTestSupport.writeMapOutput(dir, 1, m, SIZES, seed + m);
            pair.server.registerMapOutput(1, m, o[m].file(), o[m].offsets());
        }
        for (int m = 0; m < 2; m++) {
            BlockId b = BlockId.of(1, m, 0);
            Collector got = new Collector(1);
            pair.client.fetchBlocks(pair.server.address(), List.of(b), got);
            got.await().assertAllIntact(java.util.Map.of(b, o[m].bytes(b)));
        }
        assertEquals(2, senders.size(), "one request per output: " + senders);
    }

    /** The thread an empty block of a cached output is delivered on: the one that ran the fetch call. */
    private static Thread emptyBlockDeliveredOn(EnginePair pair) throws InterruptedException {
        Thread[] on = new Thread[1];
        CountDownLatch done = new CountDownLatch(1);
        pair.client.fetchBlocks(pair.server.address(), List.of(BlockId.of(1, 0, 1)), new BlockFetchListener() {
            @Override
            public void onBlockFetched(FetchedBlock block) {
                on[0] = Thread.currentThread();
                block.release();
                done.countDown();
            }

            @Override
            public void onBlockFetchFailure(BlockId block, Throwable cause) {
                done.countDown();
            }
        });
        assertTrue(done.await(30, TimeUnit.SECONDS));
        assertNotNull(on[0], "the empty block failed");
        return on[0];
    }

    @Test
    void aReduceTasksFetchCallDoesNotMakeItsRequestsOnItsThread() throws Exception {
        try (EnginePair pair = pair(true)) {
            List<Thread> senders = requestSenders(pair);
            touchTwoOutputs(pair, senders, 41);
            Thread sender = senders.get(1);
            assertTrue(sender != Thread.currentThread() && sender.getName().equals("rdma-shuffle-fetch-submitter"),
                    "the request went from " + sender);
            Thread ranOn = emptyBlockDeliveredOn(pair);
            assertTrue(ranOn.getName().equals("rdma-shuffle-fetch-submitter"), "the call ran on " + ranOn);
            EngineTestSupport.assertNothingLeaks(pair.client, pair.server);
        }
    }

    /** The same with {@code handOffFetches=false}: the caller makes them (what the test above tells apart). */
    @Test
    void withoutHandOffTheCallerMakesTheRequests() throws Exception {
        try (EnginePair pair = pair(false)) {
            List<Thread> senders = requestSenders(pair);
            touchTwoOutputs(pair, senders, 42);
            assertSame(Thread.currentThread(), senders.get(1));
            assertSame(Thread.currentThread(), emptyBlockDeliveredOn(pair));
        }
    }

    /**
     * The submitter's thread is held (a listener that does not return) while three calls wait for it,
     * and the engine closes: close returns within its bound, and each waiting call's block fails once,
     * saying the engine is closed -- none is lost, none delivered twice.
     */
    @Test
    void fetchCallsWaitingWhenTheEngineClosesFailTheirBlocks() throws Exception {
        try (EnginePair pair = pair(true)) {
            touchTwoOutputs(pair, requestSenders(pair), 43);
            CountDownLatch holding = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            pair.client.fetchBlocks(pair.server.address(), List.of(BlockId.of(1, 0, 1)), new BlockFetchListener() {
                @Override
                public void onBlockFetched(FetchedBlock block) { // the empty block: delivered by the submitter's thread
                    block.release();
                    holding.countDown();
                    try {
                        release.await(60, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }

                @Override
                public void onBlockFetchFailure(BlockId block, Throwable cause) {
                    holding.countDown();
                }
            });
            try {
                assertTrue(holding.await(30, TimeUnit.SECONDS));
                Collector waiting = new Collector(3);
                for (int p : new int[] {0, 2, 3}) {
                    pair.client.fetchBlocks(pair.server.address(), List.of(BlockId.of(1, 0, p)), waiting);
                }
                long t0 = System.nanoTime();
                pair.client.close();
                assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(20), "close is bounded");
                waiting.await();
                assertEquals(3, waiting.failed.size(), "every waiting block failed: " + waiting.failed + ", fetched "
                        + waiting.fetched.keySet());
                waiting.failed.forEach((b, e) -> assertTrue(String.valueOf(e.getMessage()).contains("closed"), b + ": " + e));
            } finally {
                release.countDown();
            }
        }
    }
}
