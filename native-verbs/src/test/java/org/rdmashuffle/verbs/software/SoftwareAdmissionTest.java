package org.rdmashuffle.verbs.software;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairEndpoint;
import org.rdmashuffle.verbs.QueuePairState;
import org.rdmashuffle.verbs.VerbsException;

/** A QP joins another over a link only with the token the target QP issued in its endpoint. */
class SoftwareAdmissionTest {

    @Test
    void connectionWithAWrongTokenIsRefused() throws IOException {
        try (SoftwarePair pair = new SoftwarePair()) {
            QueuePairEndpoint target = pair.responder.localEndpoint(SoftwarePair.OPTIONS);
            assertEquals(1, join(target, "0123456789abcdef0123456789abcdef"), "wrong token");
            assertEquals(1, join(target, ""), "no token");
            assertEquals(0, pair.responderHost.openConnections());
            // The QP is unharmed: the real peer still connects with the real token.
            pair.connect(SoftwarePair.OPTIONS);
            assertEquals(QueuePairState.RTS, pair.responder.query().state());
        }
    }

    @Test
    void endpointWithATamperedTokenFailsToConnectWithAClearError() {
        try (SoftwarePair pair = new SoftwarePair()) {
            // Of two QPs the one behind the larger (address, port, QPN) dials: forge the endpoint it is given.
            boolean requesterDials = pair.requester.localEndpoint(SoftwarePair.OPTIONS).lid()
                    > pair.responder.localEndpoint(SoftwarePair.OPTIONS).lid();
            QueuePair dialer = requesterDials ? pair.requester : pair.responder;
            QueuePairEndpoint real = (requesterDials ? pair.responder : pair.requester).localEndpoint(SoftwarePair.OPTIONS);
            QueuePairEndpoint forged = new QueuePairEndpoint(real.qpNumber(), real.psn(), real.gid(), real.lid(), real.mtu(),
                    "ffffffffffffffffffffffffffffffff");
            dialer.modifyToInit(SoftwarePair.OPTIONS);
            VerbsException e = assertThrows(VerbsException.class,
                    () -> dialer.modifyToReadyToReceive(forged, SoftwarePair.OPTIONS));
            assertEquals(Errno.ECONNREFUSED, e.errno(), e.getMessage());
            assertTrue(e.getMessage().contains("refused the data connection"), e.getMessage());
            assertFalse(e.getMessage().contains("ffffffff"), "the token is never printed");
        }
    }

    @Test
    void endpointsNeverPrintTheirToken() {
        try (SoftwarePair pair = new SoftwarePair()) {
            QueuePairEndpoint e = pair.responder.localEndpoint(SoftwarePair.OPTIONS);
            assertFalse(e.toString().contains(e.admissionToken()));
            assertEquals(32, e.admissionToken().length());
        }
    }

    @Test
    void aFloodOfConnectionsThatNeverSayHello_holdsOneAddressesShare_andTheRealPeerStillConnects() throws Exception {
        java.util.List<java.nio.channels.SocketChannel> flood = new java.util.ArrayList<>();
        try (SoftwarePair pair = new SoftwarePair()) {
            QueuePairEndpoint target = pair.responder.localEndpoint(SoftwarePair.OPTIONS);
            SoftDevice.Listener listener = ((SoftContext) pair.responderContext).device.listener();
            pair.requester.localEndpoint(SoftwarePair.OPTIONS); // starts the other listener's thread now, not during the flood
            int threadsBefore = Thread.getAllStackTraces().size();
            int count = SoftDevice.MAX_WAITING_HELLOS_PER_ADDRESS + 344; // few enough for a default open-files limit
            InetAddress attacker = InetAddress.getByName("127.0.0.2"); // loopback too, another address
            for (int i = 0; i < count; i++) {
                java.nio.channels.SocketChannel ch = java.nio.channels.SocketChannel.open();
                ch.bind(new java.net.InetSocketAddress(attacker, 0));
                ch.connect(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), target.lid()));
                flood.add(ch);
            }
            int beyondTheShare = count - SoftDevice.MAX_WAITING_HELLOS_PER_ADDRESS;
            awaitUpTo10s(() -> listener.refusals().calls() >= beyondTheShare);
            assertEquals(beyondTheShare, listener.refusals().calls(), "connections beyond the address's share are closed as they come");
            assertEquals(SoftDevice.MAX_WAITING_HELLOS_PER_ADDRESS, listener.waitingHellos());

            pair.connect(SoftwarePair.OPTIONS);
            assertEquals(QueuePairState.RTS, pair.requester.query().state(), "the real peer connects through the flood");
            // Hellos wait on virtual threads: the JDK's scheduler for them starts once (its carriers, a delay
            // scheduler, an unblocker and I/O pollers: 5 on 2 cores), not a thread per connection (256 here).
            int allowed = threadsBefore + Runtime.getRuntime().availableProcessors() + 6;
            assertTrue(Thread.getAllStackTraces().size() <= allowed, "platform threads: " + threadsBefore
                    + " before the flood, after: " + Thread.getAllStackTraces().keySet().stream().map(Thread::getName).toList());
            assertTrue(listener.refusals().warnings() <= 2, "warnings logged: " + listener.refusals().warnings());

            for (java.nio.channels.SocketChannel ch : flood) {
                ch.close();
            }
            awaitUpTo10s(() -> listener.waitingHellos() == 0);
            assertEquals(0, listener.waitingHellos(), "a closed connection gives its place back");
        } finally {
            for (java.nio.channels.SocketChannel ch : flood) {
                ch.close();
            }
        }
    }

    private static void awaitUpTo10s(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!condition.getAsBoolean() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
    }

    /** Dials a link by hand, asks to join the target QP and returns the verdict (0 joined, else refused). */
    private static int join(QueuePairEndpoint target, String token) throws IOException {
        try (RawLinkPeer peer = new RawLinkPeer(target.lid())) {
            assertEquals(0, peer.helloVerdict(), "the link hello is accepted: a link alone grants nothing");
            int verdict = peer.attach(4242, target.qpNumber(), token);
            assertThrows(EOFException.class, peer::readHeader, "a link whose first join is refused is closed");
            return verdict;
        }
    }
}
