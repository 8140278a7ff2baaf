package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.client.BlockFetchException;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.verbs.VerbsProvider;

/**
 * The first fetch from a peer sets up the connection on a dialer thread, not on the caller's: a
 * reduce task goes on with its local blocks while the handshake and the queue pairs are made (Spark
 * counts the time its first fetch call takes as fetch wait), a peer that never answers holds no task
 * thread, and closing the engine fails the fetches still waiting for a connection.
 */
class ConnectionSetUpTest {
    @TempDir
    Path dir;

    /** A TCP listener that takes connections and never says a word: a hung or hostile peer's control port. */
    private static final class SilentPeer implements AutoCloseable {
        final ServerSocket socket;
        final List<Socket> accepted = new ArrayList<>();
        final Thread acceptor;

        SilentPeer() throws IOException {
            socket = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
            acceptor = Thread.ofPlatform().daemon().start(() -> {
                try {
                    while (true) {
                        Socket s = socket.accept();
                        synchronized (accepted) {
                            accepted.add(s);
                        }
                    }
                } catch (IOException closed) {
                    // closed by the test
                }
            });
        }

        InetSocketAddress address() {
            return new InetSocketAddress(InetAddress.getLoopbackAddress(), socket.getLocalPort());
        }

        @Override
        public void close() throws IOException {
            socket.close();
            synchronized (accepted) {
                for (Socket s : accepted) {
                    s.close();
                }
            }
        }
    }

    /**
     * A TCP relay in front of a peer's control port that closes the first {@code closeFirst}
     * connections once their first bytes (the hello) arrive, without a word, as a server under load
     * closes the handshakes it cannot finish in time; it relays the others both ways. Counts them all.
     */
    private static final class ClosingRelay implements AutoCloseable {
        final ServerSocket socket;
        final java.util.concurrent.atomic.AtomicInteger accepted = new java.util.concurrent.atomic.AtomicInteger();
        private final List<Socket> open = new ArrayList<>();

        ClosingRelay(InetSocketAddress target, int closeFirst) throws IOException {
            socket = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
            Thread.ofPlatform().daemon().start(() -> {
                try {
                    while (true) {
                        Socket in = socket.accept();
                        int n = accepted.incrementAndGet();
                        if (n <= closeFirst) {
                            in.setSoTimeout(10_000);
                            in.getInputStream().read(); // the hello has come
                            in.close();
                            continue;
                        }
                        Socket out = new Socket(target.getAddress(), target.getPort());
                        synchronized (open) {
                            open.add(in);
                            open.add(out);
                        }
                        pump(in, out);
                        pump(out, in);
                    }
                } catch (IOException closed) {
                    // closed by the test
                }
            });
        }

        private static void pump(Socket from, Socket to) {
            Thread.ofVirtual().start(() -> {
                try {
                    from.getInputStream().transferTo(to.getOutputStream());
                } catch (IOException e) {
                    // either end closed
                } finally {
                    try {
                        to.close();
                        from.close();
                    } catch (IOException e) {
                        // closed already
                    }
                }
            });
        }

        InetSocketAddress address() {
            return new InetSocketAddress(InetAddress.getLoopbackAddress(), socket.getLocalPort());
        }

        @Override
        public void close() throws IOException {
            socket.close();
            synchronized (open) {
                for (Socket s : open) {
                    s.close();
                }
            }
        }
    }

    /**
     * The peer's control plane closes the first two control connections during the handshake (what a
     * server does to handshakes it cannot finish in time under a burst of thousands of peers): the
     * set-up asks again on a new connection, and the fetch completes.
     */
    @Test
    void aPeerClosingTheFirstHandshakesWithoutAWord_isAskedAgain_andTheFetchCompletes() throws Exception {
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 1, 2, 4, EngineTestSupport.size(8000));
             ClosingRelay relay = new ClosingRelay(pair.server.address(), 2)) {
            List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
            Collector got = new Collector(blocks.size());
            pair.client.fetchBlocks(relay.address(), blocks, got);
            got.await().assertAllIntact(EngineTestSupport.expected(pair.outputs, blocks));
            assertEquals(3, relay.accepted.get(), "two connections closed, the third set the connection up");
            assertEquals(1, pair.client.counters().fetchConnections());
        }
    }

    /** A peer that closes every handshake is asked a bounded number of times, then the fetch fails saying so. */
    @Test
    void aPeerClosingEveryHandshake_isAskedThreeTimes_thenTheFetchFailsSayingSo() throws Exception {
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 1, 1, 4, EngineTestSupport.size(8000));
             ClosingRelay relay = new ClosingRelay(pair.server.address(), Integer.MAX_VALUE)) {
            BlockId b = BlockId.of(1, 0, 0);
            Collector got = new Collector(1);
            pair.client.fetchBlocks(relay.address(), List.of(b), got);
            got.await();
            String message = String.valueOf(got.failed.get(b));
            assertEquals(BlockFetchException.Kind.UNREACHABLE, BlockFetchException.kindOf(got.failed.get(b)), message);
            assertTrue(message.contains("3 attempts") && message.contains("closed the connection during the handshake"), message);
            assertEquals(3, relay.accepted.get(), "asked three times, no more");
        }
    }

    /** A refusal the server names (a wrong secret) is final: one connection, the server's words, not asked again. */
    @Test
    void aPeerRefusingByName_isNotAskedAgain() throws Exception {
        byte[] wrong = "a-different-secret-of-enough-length".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        try (EnginePair pair = new EnginePair(EngineTestSupport.smallConfig(), EngineTestSupport.SECRET,
                EngineTestSupport.smallConfig(), wrong).withOutputs(dir, 1, 1, 4, EngineTestSupport.size(8000));
             ClosingRelay relay = new ClosingRelay(pair.server.address(), 0)) {
            BlockId b = BlockId.of(1, 0, 0);
            Collector got = new Collector(1);
            pair.client.fetchBlocks(relay.address(), List.of(b), got);
            got.await();
            String message = String.valueOf(got.failed.get(b));
            assertEquals(BlockFetchException.Kind.NOT_AUTHENTICATED, BlockFetchException.kindOf(got.failed.get(b)), message);
            assertTrue(message.contains("authentication failed: a wrong secret"), message);
            Thread.sleep(500); // a retry would come after a 200 ms pause or more
            assertEquals(1, relay.accepted.get(), "a named refusal is not asked again");
        }
    }

    @Test
    void aPeerThatNeverAnswersTheHandshakeDoesNotHoldTheCaller() throws Exception {
        VerbsProvider p = EngineTestSupport.provider();
        try (SilentPeer silent = new SilentPeer();
             RdmaShuffleEngine client = RdmaShuffleEngine.start(EngineTestSupport.smallConfig()
                     .set(EngineConfig.KEY_CONNECT_TIMEOUT, "2s"), EngineTestSupport.APP, EngineTestSupport.SECRET, p)) {
            BlockId block = BlockId.of(0, 1, 0);
            Collector c = new Collector(1);
            client.fetchBlocks(silent.address(), List.of(block), c);
            // The set-up can only fail once the silent peer's handshake times out: had it run on this
            // thread, fetchBlocks would have returned with the failure already told.
            assertTrue(c.failed.isEmpty() && c.fetched.isEmpty(), "fetchBlocks waited for the connection: " + c.failed);
            c.await();
            assertEquals(BlockFetchException.Kind.UNREACHABLE, BlockFetchException.kindOf(c.failed.get(block)),
                    String.valueOf(c.failed.get(block)));
            assertTrue(c.failed.get(block).getMessage().contains("cannot connect"), c.failed.get(block).getMessage());
        } finally {
            EngineTestSupport.closeProvider(p);
        }
    }

    @Test
    void concurrentFirstFetchesShareOneConnection() throws Exception {
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 4, 8, 2, EngineTestSupport.size(20_000))) {
            List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
            Collector got = new Collector(blocks.size());
            CountDownLatch go = new CountDownLatch(1);
            List<Thread> tasks = new ArrayList<>();
            for (BlockId b : blocks) { // as many reduce tasks asking at once, each for one block
                tasks.add(Thread.ofPlatform().start(() -> {
                    try {
                        go.await();
                    } catch (InterruptedException e) {
                        return;
                    }
                    pair.client.fetchBlocks(pair.server.address(), List.of(b), got);
                }));
            }
            go.countDown();
            for (Thread t : tasks) {
                t.join();
            }
            got.await().assertAllIntact(EngineTestSupport.expected(pair.outputs, blocks));
            assertEquals(1, pair.client.counters().fetchConnections(), "one data connection to the peer");
            assertEquals(1, pair.server.counters().servingConnections(), "one data connection served");
        }
    }

    @Test
    void closingFailsFetchesWaitingForAConnection() throws Exception {
        VerbsProvider p = EngineTestSupport.provider();
        try (SilentPeer silent = new SilentPeer()) {
            // A connect timeout far longer than the wait below: only the close can end these fetches in time.
            RdmaShuffleEngine client = RdmaShuffleEngine.start(EngineTestSupport.smallConfig()
                    .set(EngineConfig.KEY_CONNECT_TIMEOUT, "120s"), EngineTestSupport.APP, EngineTestSupport.SECRET, p);
            List<BlockId> blocks = List.of(BlockId.of(0, 1, 0), BlockId.of(0, 2, 0));
            Collector c = new Collector(blocks.size());
            for (BlockId b : blocks) {
                client.fetchBlocks(silent.address(), List.of(b), c);
            }
            client.close();
            assertTrue(c.answeredWithin(Duration.ofSeconds(30)), "fetches waiting for a connection outlived the engine");
            assertEquals(blocks.size(), c.failed.size(), String.valueOf(c.failed));
        } finally {
            EngineTestSupport.closeProvider(p);
        }
    }

    @Test
    void connectingAheadSetsUpThePeersBeforeTheirFirstFetch_andAPeerThatNeverAnswersHoldsUpNoOther() throws Exception {
        try (SilentPeer silent = new SilentPeer();
             EnginePair pair = EnginePair.open().withOutputs(dir, 2, 4, 2, EngineTestSupport.size(20_000))) {
            // A silent peer first: its set-up holds a dialer until the connect timeout, the others go on.
            pair.client.connectAhead(List.of(silent.address(), pair.server.address(), pair.client.address()));
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            // The server counts its side first; ours is counted once its answer is taken in.
            while ((pair.server.counters().servingConnections() < 1 || pair.client.counters().fetchConnections() < 1)
                    && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertEquals(1, pair.server.counters().servingConnections(), "the peer was connected to before any fetch");
            assertEquals(1, pair.client.counters().fetchConnections(), "one connection: none to itself, none yet to the silent peer");

            List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
            Collector got = new Collector(blocks.size());
            pair.client.fetchBlocks(pair.server.address(), blocks, got);
            got.await().assertAllIntact(EngineTestSupport.expected(pair.outputs, blocks));
            assertEquals(1, pair.server.counters().servingConnections(), "the fetch used the connection made ahead");

            // The silent peer's set-up fails in the background, told to no one; its first fetch is told.
            BlockId b = BlockId.of(0, 1, 0);
            Collector c = new Collector(1);
            pair.client.fetchBlocks(silent.address(), List.of(b), c);
            // A handshake that timed out is asked again (a loaded server looks the same as a silent one):
            // attempts begin within two connect timeouts and each lasts at most one.
            Duration setUpAtMost = EngineTestSupport.smallConfig().connectTimeout().multipliedBy(3).plusSeconds(10);
            assertTrue(c.answeredWithin(setUpAtMost), "the silent peer's fetch was not failed within " + setUpAtMost);
            assertEquals(BlockFetchException.Kind.UNREACHABLE, BlockFetchException.kindOf(c.failed.get(b)),
                    String.valueOf(c.failed.get(b)));
        }
    }
}
