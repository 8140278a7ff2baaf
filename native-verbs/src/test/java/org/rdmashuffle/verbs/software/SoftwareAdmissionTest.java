package org.rdmashuffle.verbs.software;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairEndpoint;
import org.rdmashuffle.verbs.QueuePairState;
import org.rdmashuffle.verbs.VerbsException;

/** Data connections are admitted only with the token the target QP issued in its endpoint. */
class SoftwareAdmissionTest {

    @Test
    void connectionWithAWrongTokenIsRefused() throws IOException {
        try (SoftwarePair pair = new SoftwarePair()) {
            QueuePairEndpoint target = pair.responder.localEndpoint(SoftwarePair.OPTIONS);
            assertEquals(1, hello(target, "0123456789abcdef0123456789abcdef"), "wrong token");
            assertEquals(1, hello(target, ""), "no token");
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

    /** Speaks the hello by hand and returns the listener's verdict (0 admitted, 1 refused). */
    private static int hello(QueuePairEndpoint target, String token) throws IOException {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), target.lid())) {
            s.setSoTimeout(10_000);
            SoftwarePair.writeHello(new DataOutputStream(s.getOutputStream()), 4242, target.qpNumber(), token);
            DataInputStream in = new DataInputStream(s.getInputStream());
            int verdict = in.readInt();
            assertThrows(EOFException.class, in::readInt, "a refused connection is closed");
            return verdict;
        }
    }
}
