package org.rdmashuffle.core.control;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.Test;

/** One reused connection per peer; a peer that restarted is reached again on a new connection. */
class ControlClientPoolTest {
    private static final byte[] SECRET = "pool-test-secret-0123456789abcdef".getBytes(StandardCharsets.UTF_8);
    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    private static ControlServer server(int port) {
        return new ControlServer(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), Map.of("app", SECRET)::get,
                (session, type, payload) -> {
                    if (type == 9) {
                        throw new IllegalArgumentException("refused");
                    }
                    return payload;
                }, 1 << 16);
    }

    @Test
    void callsReuseOneConnectionAndReconnectAfterThePeerRestarts() throws IOException {
        ControlServer first = server(0);
        int port = first.address().getPort();
        try (ControlClientPool pool = new ControlClientPool(SECRET, "app", 1 << 16, TIMEOUT)) {
            InetSocketAddress peer = first.address();
            assertArrayEquals(new byte[] {1}, pool.call(peer, (byte) 1, new byte[] {1}));
            assertArrayEquals(new byte[] {2}, pool.call(peer, (byte) 1, new byte[] {2}));
            assertEquals(1, pool.openConnections());
            assertThrows(IOException.class, () -> pool.call(peer, (byte) 9, new byte[0]), "an answered error is not retried");
            assertEquals(1, pool.openConnections(), "and does not drop the connection");
            first.close();
            try (ControlServer second = server(port)) {
                assertArrayEquals(new byte[] {3}, pool.call(peer, (byte) 1, new byte[] {3}));
                assertEquals(1, pool.openConnections());
            }
        } finally {
            first.close();
        }
    }

    @Test
    void aFailedAuthenticationIsNotRetried() {
        try (ControlServer s = server(0);
             ControlClientPool pool = new ControlClientPool("wrong-secret-wrong-secret-wrong".getBytes(StandardCharsets.UTF_8),
                     "app", 1 << 16, TIMEOUT)) {
            assertThrows(AuthenticationException.class, () -> pool.call(s.address(), (byte) 1, new byte[0]));
            assertEquals(0, pool.openConnections());
        }
    }

    private static long clientThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && t.getName().startsWith("rdma-control-client")).count();
    }

    /** Twelve peers, one pool of two event-loop threads: connections cost no thread each. */
    @Test
    void manyPeersShareThePoolsEventLoops() throws IOException {
        java.util.List<ControlServer> servers = new java.util.ArrayList<>();
        long before = clientThreads();
        try (ControlClientPool pool = new ControlClientPool(SECRET, "app", 1 << 16, TIMEOUT, null, 2)) {
            for (int i = 0; i < 12; i++) {
                servers.add(server(0));
            }
            for (ControlServer s : servers) {
                assertArrayEquals(new byte[] {7}, pool.call(s.address(), (byte) 1, new byte[] {7}));
            }
            assertEquals(12, pool.openConnections());
            long threads = clientThreads() - before;
            org.junit.jupiter.api.Assertions.assertTrue(threads >= 1 && threads <= 2,
                    threads + " control-client threads for 12 peers (the pool has 2)");
        } finally {
            servers.forEach(ControlServer::close);
        }
    }

    /**
     * A peer that accepts the connection and never answers holds its own set-up until the timeout,
     * not a set-up to another peer made meanwhile.
     */
    @Test
    void aSilentPeerDoesNotHoldSetUpsToOtherPeers() throws Exception {
        try (java.net.ServerSocket silent = new java.net.ServerSocket(0, 10, InetAddress.getLoopbackAddress());
             ControlServer live = server(0);
             ControlClientPool pool = new ControlClientPool(SECRET, "app", 1 << 16, Duration.ofSeconds(5), null, 2)) {
            java.util.concurrent.CountDownLatch accepted = new java.util.concurrent.CountDownLatch(1);
            Thread.ofVirtual().start(() -> {
                try {
                    java.net.Socket held = silent.accept(); // held open, never answered
                    accepted.countDown();
                    Thread.sleep(10_000);
                    held.close();
                } catch (IOException | InterruptedException e) {
                    // the test is over
                }
            });
            java.util.concurrent.CompletableFuture<Object> stuck = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    return pool.call((InetSocketAddress) silent.getLocalSocketAddress(), (byte) 1, new byte[0]);
                } catch (IOException e) {
                    return e;
                }
            });
            org.junit.jupiter.api.Assertions.assertTrue(accepted.await(5, java.util.concurrent.TimeUnit.SECONDS),
                    "the silent peer was never dialled");
            assertArrayEquals(new byte[] {5}, pool.call(live.address(), (byte) 1, new byte[] {5}));
            org.junit.jupiter.api.Assertions.assertFalse(stuck.isDone(),
                    "the call to the live peer waited for the silent peer's set-up to end");
            org.junit.jupiter.api.Assertions.assertTrue(stuck.get(10, java.util.concurrent.TimeUnit.SECONDS) instanceof IOException,
                    "the silent peer's set-up fails by its timeout");
        }
    }
}
