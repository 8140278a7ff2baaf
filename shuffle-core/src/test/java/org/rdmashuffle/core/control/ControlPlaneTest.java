package org.rdmashuffle.core.control;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

/** The control plane hands nothing to a peer that has not authenticated, and never hangs on one. */
class ControlPlaneTest {
    private static final InetSocketAddress ANY = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
    private static final byte[] SECRET = "app-secret-for-the-control-plane".getBytes(StandardCharsets.UTF_8);
    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static final int MAX_FRAME = 64 << 10;

    private final AtomicInteger handled = new AtomicInteger();

    private ControlServer server(Map<String, byte[]> secrets) {
        return new ControlServer(ANY, secrets == null ? null : secrets::get, (session, type, payload) -> {
            handled.incrementAndGet();
            if (type == 9) {
                throw new IllegalStateException("no map output 7 of shuffle 1 in /var/lib/secret/app-2 (4321 bytes)");
            }
            if (type == 8) {
                throw new RequestRefusedException("refused: a reason meant for the peer");
            }
            return (session.appId() + ":" + new String(payload, StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8);
        }, MAX_FRAME);
    }

    @Test
    void aPortAlreadyInUse_isRefusedNamingThePort() throws IOException {
        try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            InetSocketAddress busy = new InetSocketAddress(InetAddress.getLoopbackAddress(), taken.getLocalPort());
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> new ControlServer(busy, null, (session, type, payload) -> payload, MAX_FRAME).close());
            assertTrue(e.getMessage().contains("127.0.0.1:" + taken.getLocalPort()) && e.getMessage().contains("in use"),
                    e.getMessage());
        }
    }

    @Test
    void anAddressThisHostDoesNotHave_isRefusedNamingTheAddress() {
        // TEST-NET-2 (RFC 5737): assigned to no host, so bind fails locally and nothing is sent.
        InetSocketAddress foreign = new InetSocketAddress("198.51.100.77", 0);
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> new ControlServer(foreign, null, (session, type, payload) -> payload, MAX_FRAME).close());
        assertTrue(e.getMessage().contains("198.51.100.77:0") && e.getMessage().contains("bindAddress"), e.getMessage());
    }

    @Test
    void anAuthenticatedPeerGetsReplies() throws IOException {
        try (ControlServer s = server(Map.of("app-1", SECRET));
             ControlClient c = ControlClient.connect(s.address(), SECRET, "app-1", MAX_FRAME, TIMEOUT)) {
            assertArrayEquals("app-1:endpoint?".getBytes(StandardCharsets.UTF_8),
                    c.call((byte) 1, "endpoint?".getBytes(StandardCharsets.UTF_8), TIMEOUT));
            IOException e = assertThrows(IOException.class, () -> c.call((byte) 9, new byte[0], TIMEOUT));
            assertTrue(e.getMessage().contains(ControlServer.FAILED), e.getMessage());
            assertTrue(c.isOpen(), "a handler error does not drop the connection");
            IOException refused = assertThrows(IOException.class, () -> c.call((byte) 8, new byte[0], TIMEOUT));
            assertTrue(refused.getMessage().contains("refused: a reason meant for the peer"), refused.getMessage());
        }
    }

    /** A handler's exception text may name a path, a size or another tenant's numbers: it goes to the server's log only. */
    @Test
    void aHandlersExceptionTextDoesNotReachThePeer() throws IOException {
        try (ControlServer s = server(Map.of("app-1", SECRET));
             ControlClient c = ControlClient.connect(s.address(), SECRET, "app-1", MAX_FRAME, TIMEOUT)) {
            IOException e = assertThrows(IOException.class, () -> c.call((byte) 9, new byte[0], TIMEOUT));
            for (String leak : java.util.List.of("/var/lib/secret", "4321", "map output 7", "app-2")) {
                assertFalse(e.getMessage().contains(leak), "the peer was told " + leak + ": " + e.getMessage());
            }
        }
    }

    @Test
    void aWrongSecretIsRefusedAndTheHandlerNeverRuns() {
        try (ControlServer s = server(Map.of("app-1", SECRET))) {
            byte[] wrong = "not-the-secret-of-this-application".getBytes(StandardCharsets.UTF_8);
            assertThrows(AuthenticationException.class, () -> ControlClient.connect(s.address(), wrong, "app-1", MAX_FRAME, TIMEOUT));
            assertThrows(AuthenticationException.class, () -> ControlClient.connect(s.address(), SECRET, "app-2", MAX_FRAME, TIMEOUT));
            assertThrows(AuthenticationException.class, () -> ControlClient.connect(s.address(), null, "app-1", MAX_FRAME, TIMEOUT),
                    "an unauthenticated hello is refused when authentication is on");
            assertEquals(0, handled.get());
        }
    }

    /**
     * A refusal the server names (a wrong secret, an application not served, the wrong mode) is final; a
     * handshake closed without a word, or not answered within the timeout, is a lost connection a
     * set-up may ask again after (ControlConnectionLostException), never taken for a refusal.
     */
    @Test
    void aNamedRefusalIsFinal_aHandshakeClosedOrTimedOutIsALostConnection() throws Exception {
        try (ControlServer s = server(Map.of("app-1", SECRET))) {
            byte[] wrong = "not-the-secret-of-this-application".getBytes(StandardCharsets.UTF_8);
            AuthenticationException refused = assertThrows(AuthenticationException.class,
                    () -> ControlClient.connect(s.address(), wrong, "app-1", MAX_FRAME, TIMEOUT));
            assertTrue(refused.getMessage().contains(ControlServerConnection.AUTHENTICATION_FAILED), refused.getMessage());
            AuthenticationException modes = assertThrows(AuthenticationException.class,
                    () -> ControlClient.connect(s.address(), null, "app-1", MAX_FRAME, TIMEOUT));
            assertTrue(modes.getMessage().contains("authentication is required"), modes.getMessage());
        }
        try (java.net.ServerSocket closing = new java.net.ServerSocket(0, 4, InetAddress.getLoopbackAddress())) {
            Thread.ofVirtual().start(() -> {
                try {
                    try (Socket in = closing.accept()) {
                        in.getInputStream().read(); // the hello came: closed without a word
                    }
                    try (Socket silent = closing.accept()) {
                        silent.getInputStream().read(new byte[64]); // the second is never answered
                        Thread.sleep(5_000);
                    }
                } catch (IOException | InterruptedException e) {
                    // the test is over
                }
            });
            InetSocketAddress at = (InetSocketAddress) closing.getLocalSocketAddress();
            ControlConnectionLostException closed = assertThrows(ControlConnectionLostException.class,
                    () -> ControlClient.connect(at, SECRET, "app-1", MAX_FRAME, TIMEOUT));
            assertTrue(closed.getMessage().contains("closed the connection during the handshake"), closed.getMessage());
            ControlConnectionLostException late = assertThrows(ControlConnectionLostException.class,
                    () -> ControlClient.connect(at, SECRET, "app-1", MAX_FRAME, Duration.ofMillis(300)));
            assertTrue(late.getMessage().contains("did not finish"), late.getMessage());
        }
    }

    @Test
    void aRequestBeforeAuthenticatingClosesTheConnection() throws IOException {
        try (ControlServer s = server(Map.of("app-1", SECRET));
             Socket raw = new Socket(s.address().getAddress(), s.address().getPort())) {
            raw.setSoTimeout(10_000);
            DataOutputStream out = new DataOutputStream(raw.getOutputStream());
            out.writeInt(2 + 8 + 5);
            out.writeByte(ControlFrame.REQUEST);
            out.writeByte(1);
            out.writeLong(1);
            out.write("rkey?".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            assertEquals(-1, new DataInputStream(raw.getInputStream()).read(), "closed without a reply");
            assertEquals(0, handled.get());
        }
    }

    @Test
    void aClientOfAnotherProtocolVersion_isToldBothVersions_andClosed() throws IOException {
        try (ControlServer s = server(null);
             Socket raw = new Socket(s.address().getAddress(), s.address().getPort())) {
            raw.setSoTimeout(10_000);
            DataOutputStream out = new DataOutputStream(raw.getOutputStream());
            byte[] app = "app-1".getBytes(StandardCharsets.UTF_8);
            out.writeInt(2 + app.length);
            out.writeByte(ControlFrame.HELLO_UNAUTHENTICATED);
            out.writeByte(0); // a release from before the version was sent
            out.write(app);
            out.flush();
            DataInputStream in = new DataInputStream(raw.getInputStream());
            byte[] frame = new byte[in.readInt()];
            in.readFully(frame);
            assertEquals(ControlFrame.ERROR, frame[0]);
            assertEquals((byte) ProtocolVersions.SPOKEN.highest(), frame[1], "the refusal of a server that negotiates");
            String why = new String(frame, 2, frame.length - 2, StandardCharsets.UTF_8);
            assertTrue(why.contains("version 0 is not spoken here") && why.contains(ProtocolVersions.SPOKEN.describe()), why);
            assertEquals(-1, in.read(), "closed after saying why");
            assertEquals(0, handled.get());
        }
    }

    @Test
    void aServerOfAnotherProtocolVersion_failsTheConnectNamingBothVersions() throws Exception {
        try (java.net.ServerSocket other = new java.net.ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread server = Thread.ofPlatform().daemon().start(() -> {
                try (Socket peer = other.accept()) {
                    DataInputStream in = new DataInputStream(peer.getInputStream());
                    in.readFully(new byte[in.readInt()]); // the hello
                    DataOutputStream out = new DataOutputStream(peer.getOutputStream());
                    out.writeInt(2);
                    out.writeByte(ControlFrame.AUTH_OK);
                    out.writeByte(ProtocolVersions.SPOKEN.highest() + 1); // a newer release, answering a version not offered
                    out.flush();
                    in.read(); // until the client hangs up
                } catch (IOException ignored) {
                    // the client hung up
                }
            });
            InetSocketAddress at = new InetSocketAddress(InetAddress.getLoopbackAddress(), other.getLocalPort());
            ProtocolVersionException e = assertThrows(ProtocolVersionException.class,
                    () -> ControlClient.connect(at, null, "app-1", MAX_FRAME, TIMEOUT));
            assertTrue(e.getMessage().contains("version " + (ProtocolVersions.SPOKEN.highest() + 1) + ", which this client did not offer")
                    && e.getMessage().contains(ProtocolVersions.SPOKEN.describe()), e.getMessage());
            server.join(10_000);
        }
    }

    @Test
    void anOversizedFrameClosesTheConnection() throws IOException {
        try (ControlServer s = server(Map.of("app-1", SECRET));
             Socket raw = new Socket(s.address().getAddress(), s.address().getPort())) {
            raw.setSoTimeout(10_000);
            DataOutputStream out = new DataOutputStream(raw.getOutputStream());
            out.writeInt(Integer.MAX_VALUE); // claims 2 GiB
            out.write(new byte[1024]);
            out.flush();
            assertEquals(-1, new DataInputStream(raw.getInputStream()).read());
        }
    }

    @Test
    void withAuthenticationOffPeersAnnounceThemselves() throws IOException {
        try (ControlServer s = server(null);
             ControlClient c = ControlClient.connect(s.address(), null, "app-9", MAX_FRAME, TIMEOUT)) {
            assertArrayEquals("app-9:x".getBytes(StandardCharsets.UTF_8), c.call((byte) 1, new byte[] {'x'}, TIMEOUT));
            assertThrows(AuthenticationException.class, () -> ControlClient.connect(s.address(), SECRET, "app-9", MAX_FRAME, TIMEOUT),
                    "a client that insists on authentication learns the server does not authenticate");
        }
    }

    @Test
    void aConnectionThatNeverHandshakesIsClosed() throws IOException {
        try (ControlServer s = new ControlServer(ANY, Map.of("app-1", SECRET)::get, (session, type, payload) -> payload,
                MAX_FRAME, RequestScheduler.INLINE, Duration.ofMillis(300), Duration.ofMinutes(10), ControlServer.Admission.ANY);
             Socket silent = new Socket(s.address().getAddress(), s.address().getPort())) {
            silent.setSoTimeout(10_000);
            long start = System.nanoTime();
            assertEquals(-1, new DataInputStream(silent.getInputStream()).read(), "closed by the server");
            assertTrue(System.nanoTime() - start < 5_000_000_000L, "within the handshake timeout");
        }
    }

    @Test
    void anIdleConnectionHoldingNothingIsClosed() throws IOException {
        // The idle time counts from authentication (a slow handshake is the handshake timeout's business).
        try (ControlServer s = new ControlServer(ANY, Map.of("app-1", SECRET)::get, (session, type, payload) -> payload,
                MAX_FRAME, RequestScheduler.INLINE, TIMEOUT, Duration.ofSeconds(1), ControlServer.Admission.ANY);
             ControlClient c = ControlClient.connect(s.address(), SECRET, "app-1", MAX_FRAME, TIMEOUT)) {
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (c.isOpen() && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertFalse(c.isOpen(), "an authenticated connection with no data connection, silent past the idle timeout");
        }
    }

    @Test
    void anIdleConnectionWithADataConnectionStays() throws Exception {
        try (ControlServer s = new ControlServer(ANY, Map.of("app-1", SECRET)::get, (session, type, payload) -> {
            session.onClose(() -> { }); // as a CONNECT does: the data connection ends with this one
            return payload;
        }, MAX_FRAME, RequestScheduler.INLINE, TIMEOUT, Duration.ofSeconds(1), ControlServer.Admission.ANY);
             ControlClient c = ControlClient.connect(s.address(), SECRET, "app-1", MAX_FRAME, TIMEOUT)) {
            c.call((byte) 1, new byte[] {5}, TIMEOUT);
            Thread.sleep(3000);
            assertTrue(c.isOpen(), "closed while a data connection hung on it");
        }
    }

    /**
     * The idle check is a deadline, not a sweep: a connection holding a data connection has none, and
     * the end of its last data connection sets it again, so it still idles out once nothing hangs on it.
     */
    @Test
    void aConnectionWhoseLastDataConnectionEndedIdlesOut() throws Exception {
        Runnable dataConnection = () -> { };
        try (ControlServer s = new ControlServer(ANY, Map.of("app-1", SECRET)::get, (session, type, payload) -> {
            if (type == 1) {
                session.onClose(dataConnection); // as a CONNECT does
            } else {
                session.cancelOnClose(dataConnection); // as a DISCONNECT does
            }
            return payload;
        }, MAX_FRAME, RequestScheduler.INLINE, TIMEOUT, Duration.ofSeconds(1), ControlServer.Admission.ANY);
             ControlClient c = ControlClient.connect(s.address(), SECRET, "app-1", MAX_FRAME, TIMEOUT)) {
            c.call((byte) 1, new byte[] {5}, TIMEOUT);
            Thread.sleep(2500); // past the first deadline, which found it holding and set nothing
            assertTrue(c.isOpen(), "closed while a data connection hung on it");
            c.call((byte) 2, new byte[] {6}, TIMEOUT);
            long ended = System.nanoTime();
            long deadline = ended + 20_000_000_000L;
            while (c.isOpen() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertFalse(c.isOpen(), "still open 20 s after its last data connection ended (idle timeout 1 s)");
            assertTrue(System.nanoTime() - ended >= 900_000_000L, "closed before the idle timeout");
        }
    }

    /** A peer that pipelines (two requests at once, by hand: our client never does) is not one of ours: it is closed. */
    @Test
    void aSecondRequestWhileOneIsUnderWayClosesTheConnection() throws Exception {
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newSingleThreadExecutor();
        try (ControlServer s = new ControlServer(ANY, null, (session, type, payload) -> {
            release.await();
            return payload;
        }, MAX_FRAME, RequestScheduler.of(pool), TIMEOUT, Duration.ofMinutes(10), ControlServer.Admission.ANY);
             Socket raw = new Socket(s.address().getAddress(), s.address().getPort())) {
            raw.setSoTimeout(10_000);
            java.io.DataOutputStream out = new java.io.DataOutputStream(raw.getOutputStream());
            byte[] app = "app-1".getBytes(StandardCharsets.UTF_8);
            out.writeInt(2 + app.length);
            out.write(new byte[] {ControlFrame.HELLO_UNAUTHENTICATED, ProtocolVersions.ALONE}); // one version alone: no offer byte
            out.write(app);
            for (long call = 1; call <= 2; call++) {
                out.writeInt(2 + 8 + 1);
                out.write(new byte[] {ControlFrame.REQUEST, 1});
                out.writeLong(call);
                out.write(7);
            }
            out.flush();
            DataInputStream in = new DataInputStream(raw.getInputStream());
            byte[] authOk = new byte[in.readInt()];
            in.readFully(authOk);
            assertEquals(ControlFrame.AUTH_OK, authOk[0]);
            assertEquals(-1, in.read(), "the pipelining connection was closed");
        } finally {
            release.countDown();
            pool.shutdownNow();
        }
    }

    /**
     * A call timed out while the server still handles it: the next call on the same connection waits
     * for that reply instead of sending a second request (which would close the connection and every
     * data connection set up on it). With requests on a real executor, as in production.
     */
    @Test
    void aCallAfterOneThatTimedOutWaitsForItsReply_andTheSessionStays() throws Exception {
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(2);
        java.util.concurrent.atomic.AtomicBoolean sessionClosed = new java.util.concurrent.atomic.AtomicBoolean();
        try (ControlServer s = new ControlServer(ANY, Map.of("app-1", SECRET)::get, (session, type, payload) -> {
            String asked = new String(payload, StandardCharsets.UTF_8);
            session.onClose(() -> sessionClosed.set(true)); // as a CONNECT's data connection does
            if (asked.equals("slow")) {
                Thread.sleep(1500);
            }
            return ("answer to " + asked).getBytes(StandardCharsets.UTF_8);
        }, MAX_FRAME, RequestScheduler.of(pool), TIMEOUT, Duration.ofMinutes(10), ControlServer.Admission.ANY);
             ControlClient c = ControlClient.connect(s.address(), SECRET, "app-1", MAX_FRAME, TIMEOUT)) {
            IOException late = assertThrows(IOException.class,
                    () -> c.call((byte) 1, "slow".getBytes(StandardCharsets.UTF_8), Duration.ofMillis(200)));
            assertTrue(late.getMessage().contains("did not come"), late.getMessage());
            // The slow call's answer arrives during the next call: waited for, and not taken for this one's.
            assertArrayEquals("answer to next".getBytes(StandardCharsets.UTF_8),
                    c.call((byte) 1, "next".getBytes(StandardCharsets.UTF_8), TIMEOUT));
            assertEquals(1, c.staleReplies());
            assertTrue(c.isOpen(), "the connection survived the call that timed out");
            assertFalse(sessionClosed.get(), "what the session set up ended with it");
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aDeadPeerFailsTheCallWithinTheTimeout() throws IOException {
        ControlServer s = server(Map.of("app-1", SECRET));
        try (ControlClient c = ControlClient.connect(s.address(), SECRET, "app-1", MAX_FRAME, TIMEOUT)) {
            s.close();
            long start = System.nanoTime();
            IOException e = assertThrows(IOException.class, () -> c.call((byte) 1, new byte[0], TIMEOUT));
            assertTrue(System.nanoTime() - start < TIMEOUT.toNanos() + 5_000_000_000L, "bounded");
            assertTrue(e.getMessage().contains(s.address().toString()) || e.getMessage().contains("closed"), e.getMessage());
            assertFalse(c.isOpen());
        }
    }

    /**
     * A HELLO for an application this node does not serve was refused at once, one for an application
     * it serves answered with a challenge: a peer holding no secret could list the applications a node
     * serves. Both get a challenge now, and both fail alike at the response.
     */
    @Test
    void aHelloForAnApplicationNotServedHereIsAnsweredAsForOneThatIs() throws Exception {
        try (ControlServer s = server(Map.of("app-1", SECRET))) {
            for (String app : java.util.List.of("app-1", "app-not-here")) {
                try (Socket raw = new Socket(s.address().getAddress(), s.address().getPort())) {
                    raw.setSoTimeout(10_000);
                    byte[] hello = new ChallengeResponse.Client("some-other-secret-0123456789".getBytes(StandardCharsets.UTF_8), app)
                            .hello();
                    java.io.DataOutputStream out = new java.io.DataOutputStream(raw.getOutputStream());
                    out.writeInt(2 + hello.length);
                    out.write(new byte[] {ControlFrame.HELLO, ProtocolVersions.ALONE}); // one version alone: no offer byte
                    out.write(hello);
                    out.flush();
                    DataInputStream in = new DataInputStream(raw.getInputStream());
                    byte[] frame = new byte[in.readInt()];
                    in.readFully(frame);
                    assertEquals(ControlFrame.CHALLENGE, frame[0], app + ": answered with kind " + frame[0]);
                    assertEquals(2 + ChallengeResponse.NONCE, frame.length, app + ": a nonce, nothing else");
                    out.writeInt(2 + ChallengeResponse.MAC);
                    out.write(new byte[] {ControlFrame.RESPONSE, 0});
                    out.write(new byte[ChallengeResponse.MAC]);
                    out.flush();
                    byte[] refusal = new byte[in.readInt()];
                    in.readFully(refusal);
                    assertEquals(ControlFrame.ERROR, refusal[0], app + ": answered with kind " + refusal[0]);
                    assertEquals(ControlServerConnection.AUTHENTICATION_FAILED,
                            new String(refusal, 2, refusal.length - 2, StandardCharsets.UTF_8), app + ": the same words for both");
                    assertEquals(-1, in.read(), app + ": then closed");
                }
            }
            assertEquals(0, handled.get());
        }
    }
}
