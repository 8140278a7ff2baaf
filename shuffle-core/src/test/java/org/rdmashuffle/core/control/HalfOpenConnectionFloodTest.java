package org.rdmashuffle.core.control;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.Test;

/**
 * A peer that opens hundreds of control connections and never authenticates (half-open, as far as
 * the handshake goes): the server holds a bounded share of them, closes the rest as they come, keeps
 * serving authenticated peers, starts no thread, and says so in the log a few times, not hundreds.
 */
class HalfOpenConnectionFloodTest {
    private static final InetSocketAddress ANY = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
    private static final byte[] SECRET = "app-secret-for-the-control-plane".getBytes(StandardCharsets.UTF_8);
    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static final int MAX_FRAME = 64 << 10;
    /** More than one address may hold, few enough for a default limit of open files. */
    private static final int FLOOD = ControlServer.MAX_UNAUTHENTICATED_PER_ADDRESS + 344;

    private static void await(BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (!condition.getAsBoolean() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
    }

    @Test
    void aFloodOfConnectionsThatNeverAuthenticate_holdsOneAddressesShare_andAnAuthenticatedPeerIsServed() throws Exception {
        List<SocketChannel> flood = new ArrayList<>();
        // A handshake timeout far beyond the test: only the bound can close the flood's connections in time.
        try (ControlServer s = new ControlServer(ANY, Map.of("app-1", SECRET)::get, (session, type, payload) -> payload,
                MAX_FRAME, RequestScheduler.INLINE, Duration.ofMinutes(5), Duration.ofMinutes(10), ControlServer.Admission.ANY)) {
            int threadsBefore = Thread.getAllStackTraces().size();
            InetAddress attacker = InetAddress.getByName("127.0.0.2"); // loopback too, another address
            for (int i = 0; i < FLOOD; i++) {
                SocketChannel ch = SocketChannel.open();
                ch.bind(new InetSocketAddress(attacker, 0));
                ch.connect(s.address());
                flood.add(ch);
            }
            int beyondTheShare = FLOOD - ControlServer.MAX_UNAUTHENTICATED_PER_ADDRESS;
            await(() -> s.closings().calls() >= beyondTheShare);
            assertEquals(beyondTheShare, s.closings().calls(), "connections beyond the address's share are closed as they come");
            assertEquals(ControlServer.MAX_UNAUTHENTICATED_PER_ADDRESS, s.unauthenticatedConnections());

            // A peer of ours behind the flood's address is told "busy" (it asks again later), not "refused".
            assertThrows(ServerBusyException.class,
                    () -> ControlClient.connect(s.address(), SECRET, "app-1", MAX_FRAME, TIMEOUT, attacker).close());
            try (ControlClient c = ControlClient.connect(s.address(), SECRET, "app-1", MAX_FRAME, TIMEOUT)) {
                assertArrayEquals("x".getBytes(StandardCharsets.UTF_8), c.call((byte) 1, new byte[] {'x'}, TIMEOUT),
                        "an authenticated peer from another address is served through the flood");
            }
            assertTrue(Thread.getAllStackTraces().size() <= threadsBefore + 1, "threads: " + threadsBefore
                    + " before the flood, " + Thread.getAllStackTraces().size() + " after (the client's own event loop may be one)");
            assertTrue(s.closings().warnings() <= 2, "warnings logged: " + s.closings().warnings() + " for "
                    + s.closings().calls() + " connections closed");

            for (SocketChannel ch : flood) {
                ch.close();
            }
            await(() -> s.unauthenticatedConnections() == 0);
            assertEquals(0, s.unauthenticatedConnections(), "a closed connection gives its place back");
        } finally {
            for (SocketChannel ch : flood) {
                ch.close();
            }
        }
    }

    /**
     * The all-addresses bound (1,024) falls to four addresses of 256 each. Full, the service closes the
     * oldest waiting connection of the address that holds the most to let in a connection from an
     * address that holds fewer: a newcomer from a fifth address authenticates through the flood.
     */
    @Test
    void aFloodFromFourAddressesCannotKeepANewcomerOut() throws Exception {
        List<SocketChannel> flood = new ArrayList<>();
        try (ControlServer s = new ControlServer(ANY, Map.of("app-1", SECRET)::get, (session, type, payload) -> payload,
                MAX_FRAME, RequestScheduler.INLINE, Duration.ofMinutes(5), Duration.ofMinutes(10), ControlServer.Admission.ANY)) {
            for (int a = 2; a <= 5; a++) {
                InetAddress attacker = InetAddress.getByName("127.0.0." + a);
                for (int i = 0; i < ControlServer.MAX_UNAUTHENTICATED_PER_ADDRESS; i++) {
                    SocketChannel ch = SocketChannel.open();
                    ch.bind(new InetSocketAddress(attacker, 0));
                    ch.connect(s.address());
                    flood.add(ch);
                }
            }
            await(() -> s.unauthenticatedConnections() == ControlServer.MAX_UNAUTHENTICATED);
            assertEquals(ControlServer.MAX_UNAUTHENTICATED, s.unauthenticatedConnections(), "every place taken by the flood");
            InetAddress newcomer = InetAddress.getByName("127.0.0.6");
            try (ControlClient c = ControlClient.connect(s.address(), SECRET, "app-1", MAX_FRAME, TIMEOUT, newcomer)) {
                assertArrayEquals("x".getBytes(StandardCharsets.UTF_8), c.call((byte) 1, new byte[] {'x'}, TIMEOUT),
                        "a newcomer from an address holding no place is served through a full table");
            }
            assertTrue(s.unauthenticatedConnections() <= ControlServer.MAX_UNAUTHENTICATED);
        } finally {
            for (SocketChannel ch : flood) {
                ch.close();
            }
        }
    }
}
