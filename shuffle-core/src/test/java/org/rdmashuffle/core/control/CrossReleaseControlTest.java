package org.rdmashuffle.core.control;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
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

/**
 * This release's control plane against the previous release's ({@link PreviousRelease}, protocol
 * version 3 as 0.1.0 encodes it) both ways, against itself, and against releases it shares no version
 * with (docs/compatibility.md).
 */
class CrossReleaseControlTest {
    private static final InetSocketAddress ANY = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
    private static final String APP = "app-1";
    private static final byte[] SECRET = "cross-release-secret-0123456789".getBytes(StandardCharsets.UTF_8);
    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static final int MAX_FRAME = ControlServer.MAX_FRAME_BYTES;
    private static final ProtocolVersions SPOKEN = ProtocolVersions.SPOKEN;

    private final AtomicInteger handled = new AtomicInteger();

    /** Answers with the application and the version the session agreed: what the caller checks. */
    private final ControlHandler echo = (session, type, payload) -> {
        handled.incrementAndGet();
        return (session.appId() + " v" + session.protocolVersion() + ": " + new String(payload, StandardCharsets.UTF_8))
                .getBytes(StandardCharsets.UTF_8);
    };

    private ControlServer server(byte[] secret, ProtocolVersions versions) {
        return new ControlServer(ANY, secret == null ? null : Map.of(APP, secret)::get, echo, MAX_FRAME, RequestScheduler.INLINE,
                TIMEOUT, Duration.ofMinutes(10), ControlServer.Admission.ANY, versions);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void thisReleasesServer_servesAPreviousReleaseClient_inItsVersion() throws IOException {
        for (byte[] secret : new byte[][] {SECRET, null}) {
            try (ControlServer s = server(secret, SPOKEN);
                 PreviousRelease.Client c = PreviousRelease.Client.connect(s.address(), secret, APP, TIMEOUT)) {
                assertArrayEquals(bytes(APP + " v" + PreviousRelease.VERSION + ": endpoint?"), c.call((byte) 1, bytes("endpoint?")),
                        secret == null ? "authentication off" : "authenticated");
            }
        }
    }

    @Test
    void thisReleasesClient_talksToAPreviousReleaseServer_inItsVersion() throws IOException {
        for (byte[] secret : new byte[][] {SECRET, null}) {
            try (PreviousRelease.Server s = new PreviousRelease.Server(ANY, secret == null ? null : Map.of(APP, secret)::get, echo);
                 ControlClient c = ControlClient.connect(s.address(), secret, APP, MAX_FRAME, TIMEOUT)) {
                assertEquals(PreviousRelease.VERSION, c.protocolVersion());
                assertArrayEquals(bytes(APP + " v" + PreviousRelease.VERSION + ": endpoint?"),
                        c.call((byte) 1, bytes("endpoint?"), TIMEOUT));
                assertEquals(1, s.versionRefusals(), "our offer refused once, then version 3 alone accepted");
                assertEquals(1, s.sessions());
            }
        }
    }

    @Test
    void twoEndsOfThisRelease_agreeOnItsNewestVersion() throws IOException {
        for (byte[] secret : new byte[][] {SECRET, null}) {
            try (ControlServer s = server(secret, SPOKEN);
                 ControlClient c = ControlClient.connect(s.address(), secret, APP, MAX_FRAME, TIMEOUT)) {
                assertEquals(SPOKEN.highest(), c.protocolVersion());
                assertArrayEquals(bytes(APP + " v" + SPOKEN.highest() + ": x"), c.call((byte) 1, bytes("x"), TIMEOUT));
                assertEquals(0, s.closings().calls(), "no connection refused on the way");
            }
        }
    }

    /** A server of a later release that still speaks ours, and a client of a later release: the highest both speak. */
    @Test
    void neighbouringReleasesOfferingRanges_agreeOnTheHighestVersionBothSpeak() throws IOException {
        ProtocolVersions next = new ProtocolVersions(SPOKEN.highest(), SPOKEN.highest() + 1);
        try (ControlServer s = server(SECRET, next);
             ControlClient c = ControlClient.connect(s.address(), SECRET, APP, MAX_FRAME, TIMEOUT)) {
            assertEquals(SPOKEN.highest(), c.protocolVersion(), "this release's client, the next release's server");
        }
        try (ControlServer s = server(SECRET, SPOKEN);
             ControlClient c = ControlClient.connect(s.address(), SECRET, APP, MAX_FRAME, TIMEOUT, null, null, next)) {
            assertEquals(SPOKEN.highest(), c.protocolVersion(), "the next release's client, this release's server");
        }
    }

    @Test
    void aServerSpeakingOnlyNewerVersions_refusesThisClient_namingBothSides_andIsNotAskedAgain() {
        ProtocolVersions newer = new ProtocolVersions(SPOKEN.highest() + 1, SPOKEN.highest() + 2);
        try (ControlServer s = server(SECRET, newer)) {
            ProtocolVersionException e = assertThrows(ProtocolVersionException.class,
                    () -> ControlClient.connect(s.address(), SECRET, APP, MAX_FRAME, TIMEOUT));
            assertTrue(e.getMessage().contains(newer.describe()) && e.getMessage().contains(SPOKEN.describe()), e.getMessage());
            assertEquals(1, s.closings().calls(), "a server that negotiates refused: no second connection with version 3 alone");
            assertEquals(0, handled.get());
        }
    }

    @Test
    void aClientOfferingOnlyNewerVersions_isRefused_namingBothSides() {
        ProtocolVersions newer = new ProtocolVersions(SPOKEN.highest() + 1, SPOKEN.highest() + 2);
        try (ControlServer s = server(SECRET, SPOKEN)) {
            ProtocolVersionException e = assertThrows(ProtocolVersionException.class,
                    () -> ControlClient.connect(s.address(), SECRET, APP, MAX_FRAME, TIMEOUT, null, null, newer));
            assertTrue(e.getMessage().contains(newer.describe() + " offered") && e.getMessage().contains(SPOKEN.describe()),
                    e.getMessage());
            assertEquals(0, handled.get());
        }
    }

    /** The previous release's client meets a server that no longer speaks version 3: refused as 0.1.0 understands it. */
    @Test
    void aPreviousReleaseClient_isRefusedByAServerPastItsVersion_namingBothSides() {
        ProtocolVersions later = new ProtocolVersions(PreviousRelease.VERSION + 1, PreviousRelease.VERSION + 2);
        try (ControlServer s = server(SECRET, later)) {
            ProtocolVersionException e = assertThrows(ProtocolVersionException.class,
                    () -> PreviousRelease.Client.connect(s.address(), SECRET, APP, TIMEOUT));
            assertTrue(e.getMessage().contains("version " + PreviousRelease.VERSION + " is not spoken here")
                    && e.getMessage().contains(later.describe()), e.getMessage());
        }
    }

    /** A server of a release before the previous one (version 2 alone): the offer, then 3 alone, both refused. */
    @Test
    void aServerOlderThanThePreviousRelease_refusesThisClient_namingBothSides() throws IOException {
        int older = PreviousRelease.VERSION - 1;
        try (PreviousRelease.Server s = new PreviousRelease.Server(ANY, Map.of(APP, SECRET)::get, echo, older)) {
            ProtocolVersionException e = assertThrows(ProtocolVersionException.class,
                    () -> ControlClient.connect(s.address(), SECRET, APP, MAX_FRAME, TIMEOUT));
            assertTrue(e.getMessage().contains("speaks version " + older) && e.getMessage().contains(SPOKEN.describe()),
                    e.getMessage());
            assertEquals(2, s.versionRefusals(), "the offer, then version 3 alone");
            assertEquals(0, handled.get());
        }
    }

    /** A client whose versions no longer include 3 does not fall back to it against the previous release's server. */
    @Test
    void aClientPastVersionThree_doesNotFallBackToIt() throws IOException {
        ProtocolVersions later = new ProtocolVersions(PreviousRelease.VERSION + 1, PreviousRelease.VERSION + 2);
        try (PreviousRelease.Server s = new PreviousRelease.Server(ANY, Map.of(APP, SECRET)::get, echo)) {
            ProtocolVersionException e = assertThrows(ProtocolVersionException.class,
                    () -> ControlClient.connect(s.address(), SECRET, APP, MAX_FRAME, TIMEOUT, null, null, later));
            assertTrue(e.getMessage().contains("speaks version " + PreviousRelease.VERSION) && e.getMessage().contains(later.describe()),
                    e.getMessage());
            assertEquals(1, s.versionRefusals());
        }
    }

    @Test
    void aMalformedOffer_isRefusedSayingWhatIsWrong_andClosed() throws IOException {
        byte highest = (byte) SPOKEN.highest();
        try (ControlServer s = server(null, SPOKEN)) {
            assertEquals("malformed " + ProtocolVersions.REFUSAL + " offer: highest version " + SPOKEN.highest()
                    + " and no lowest (an empty hello)", refusalOf(s, ControlFrame.HELLO_UNAUTHENTICATED, highest, new byte[0]));
            assertEquals("malformed " + ProtocolVersions.REFUSAL + " offer: lowest version 200 above the highest, "
                    + SPOKEN.highest(), refusalOf(s, ControlFrame.HELLO_UNAUTHENTICATED, highest, new byte[] {(byte) 200, 'a'}));
            assertEquals(0, handled.get());
        }
        try (ControlServer s = server(SECRET, SPOKEN)) {
            assertTrue(refusalOf(s, ControlFrame.HELLO, highest, new byte[0]).contains("no lowest"));
        }
    }

    /** Sends one HELLO by hand; returns the ERROR's text, checking the server then closed. */
    private static String refusalOf(ControlServer s, byte kind, byte type, byte[] payload) throws IOException {
        try (Socket raw = new Socket(s.address().getAddress(), s.address().getPort())) {
            raw.setSoTimeout(10_000);
            DataOutputStream out = new DataOutputStream(raw.getOutputStream());
            out.writeInt(2 + payload.length);
            out.write(new byte[] {kind, type});
            out.write(payload);
            out.flush();
            DataInputStream in = new DataInputStream(raw.getInputStream());
            byte[] frame = new byte[in.readInt()];
            in.readFully(frame);
            assertEquals(ControlFrame.ERROR, frame[0]);
            assertEquals(-1, in.read(), "closed after saying why");
            return new String(frame, 2, frame.length - 2, StandardCharsets.UTF_8);
        }
    }
}
