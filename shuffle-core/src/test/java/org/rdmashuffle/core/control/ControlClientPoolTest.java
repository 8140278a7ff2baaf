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
}
