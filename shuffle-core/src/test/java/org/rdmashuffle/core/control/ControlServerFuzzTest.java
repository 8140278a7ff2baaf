package org.rdmashuffle.core.control;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.LengthFieldPrepender;

/**
 * The control plane as a peer meets it before and after authenticating: the server's per-connection
 * pipeline (the frame decoder, the prepender and {@link ControlServer}'s session handler) on a Netty
 * EmbeddedChannel, fed a sequence of frames the input builds -- honest HELLOs and RESPONSEs of a client
 * that holds the secret or not, requests, frames of any kind, type and length, lying length prefixes and
 * raw bytes, each written in one to three pieces.
 *
 * <p>Contract: no exception escapes the pipeline; everything the server writes is a well-formed frame of a
 * kind it sends (CHALLENGE, AUTH_OK, REPLY, ERROR) in its place -- one 32-byte CHALLENGE after a HELLO; an
 * AUTH_OK only after the RESPONSE of a client holding the application's secret, with a proof that client
 * accepts; a REPLY (the handler's answer: an echo) only after AUTH_OK; a connection that has not
 * authenticated is closed once the handshake timeout passes; and a closed connection leaves nothing
 * registered with the server. docs/fuzzing.md
 */
class ControlServerFuzzTest {
    private static final String APP = "app-1";
    private static final byte[] SECRET = "fuzz-secret-0123456789abcdef-xyz".getBytes(StandardCharsets.US_ASCII);
    /** The engine's bound (RdmaShuffleEngine's MAX_CONTROL_FRAME). */
    private static final int MAX_FRAME = 64 << 10;
    private static final Duration HANDSHAKE_TIMEOUT = Duration.ofMillis(100);
    /** A request of this type is refused by the handler in words (RequestRefusedException); any other is echoed. */
    private static final byte REFUSED_TYPE = 9;
    private static final ProtocolVersions SPOKEN = ProtocolVersions.SPOKEN;

    /** One server per JVM: only its settings and tables matter, each input gets a session of its own. */
    private static final ControlServer SERVER = new ControlServer(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            Map.of(APP, SECRET)::get, (session, type, payload) -> {
                if (type == REFUSED_TYPE) {
                    throw new RequestRefusedException("refused by the fuzz test's handler");
                }
                return payload;
            }, MAX_FRAME, RequestScheduler.INLINE, HANDSHAKE_TIMEOUT, Duration.ofMinutes(10), ControlServer.Admission.ANY);

    @FuzzTest
    void session(FuzzedDataProvider data) {
        Session s = new Session();
        EmbeddedChannel channel = new EmbeddedChannel(new LengthFieldBasedFrameDecoder(MAX_FRAME, 0, 4, 0, 4),
                new LengthFieldPrepender(4), SERVER.newSessionForTests());
        channel.freezeTime(); // the handshake timeout passes when the test says so, not when the machine is slow
        try {
            for (int step = 0; step < 12 && data.remainingBytes() > 0 && channel.isOpen(); step++) {
                byte[] bytes = nextWrite(data, s);
                int first = data.consumeInt(0, bytes.length);
                int second = data.consumeInt(first, bytes.length);
                for (byte[] piece : new byte[][] {Arrays.copyOfRange(bytes, 0, first), Arrays.copyOfRange(bytes, first, second),
                        Arrays.copyOfRange(bytes, second, bytes.length)}) {
                    if (piece.length > 0 && channel.isOpen()) {
                        channel.writeInbound(Unpooled.wrappedBuffer(piece));
                        channel.runPendingTasks();
                        channel.checkException();
                        s.read(channel);
                    }
                }
            }
            if (channel.isOpen() && !s.authenticated) {
                channel.advanceTimeBy(HANDSHAKE_TIMEOUT.toMillis() + 1, TimeUnit.MILLISECONDS);
                channel.runPendingTasks();
                channel.checkException();
                s.read(channel);
                assertFalse(channel.isOpen(), "a connection that did not authenticate outlived the handshake timeout");
            }
            assertEquals(0, s.pending.size(), "the server wrote part of a frame: " + s.pending.size() + " bytes");
        } finally {
            channel.finishAndReleaseAll();
        }
        assertEquals(0, SERVER.connections(APP), "a closed connection is still counted for " + APP);
    }

    /** What the test wrote and what the server answered so far, on one connection. */
    private static final class Session {
        final ByteArrayOutputStream pending = new ByteArrayOutputStream();
        /** The client whose HELLO was sent last (null: none, or not an honest one). */
        ChallengeResponse.Client client;
        boolean clientHoldsSecret;
        /** The version the last honest HELLO's encoding must be answered in (-1: any the server speaks). */
        int expectedVersion = -1;
        /** The CHALLENGE the server sent, if any, and the version it answered in. */
        byte[] challenge;
        int challengeVersion;
        /** The client that sent an honest RESPONSE over that challenge with the application's secret, if one did. */
        ChallengeResponse.Client proved;
        boolean authenticated;
        /** Whether every byte written so far was a frame the test built and recorded (then replies are checked exactly). */
        boolean framed = true;
        final Map<Long, byte[]> requests = new HashMap<>();

        /** Reads and checks everything the server wrote since the last call. */
        void read(EmbeddedChannel channel) {
            for (Object o; (o = channel.readOutbound()) != null; ) {
                ByteBuf b = (ByteBuf) o;
                try {
                    byte[] bytes = new byte[b.readableBytes()];
                    b.readBytes(bytes);
                    pending.writeBytes(bytes);
                } finally {
                    b.release();
                }
            }
            ByteBuffer in = ByteBuffer.wrap(pending.toByteArray());
            while (in.remaining() >= 4) {
                int length = in.getInt(in.position());
                assertTrue(length >= 2 && length <= MAX_FRAME, "the server wrote a frame of " + length + " bytes");
                if (in.remaining() < 4 + length) {
                    break;
                }
                in.position(in.position() + 4);
                byte kind = in.get();
                byte type = in.get();
                byte[] payload = new byte[length - 2];
                in.get(payload);
                check(kind, type, payload);
            }
            byte[] rest = Arrays.copyOfRange(in.array(), in.position(), in.limit());
            pending.reset();
            pending.writeBytes(rest);
        }

        private void check(byte kind, byte type, byte[] payload) {
            switch (kind) {
                case ControlFrame.CHALLENGE -> {
                    assertTrue(SPOKEN.speaks(type & 0xFF), "CHALLENGE's version " + type + " is not one the server speaks");
                    if (expectedVersion >= 0 && framed) { // raw bytes may have made another HELLO of it
                        assertEquals(expectedVersion, type & 0xFF, "CHALLENGE's version");
                    }
                    challengeVersion = type & 0xFF;
                    assertEquals(ChallengeResponse.NONCE, payload.length, "CHALLENGE's nonce");
                    assertTrue(challenge == null, "a second CHALLENGE");
                    challenge = payload;
                }
                case ControlFrame.AUTH_OK -> {
                    assertEquals(challengeVersion, type & 0xFF, "AUTH_OK's version, the CHALLENGE's");
                    assertTrue(challenge != null && !authenticated, "an AUTH_OK out of turn");
                    if (proved == null) {
                        fail("AUTH_OK to a peer that never sent the proof of a client holding the secret");
                    }
                    assertEquals(ChallengeResponse.MAC, payload.length, "AUTH_OK's proof");
                    proved.verifyServer(payload); // throws if the server's proof is not the one over this exchange
                    authenticated = true;
                }
                case ControlFrame.REPLY -> {
                    assertTrue(authenticated, "a REPLY to a peer that did not authenticate");
                    assertTrue(payload.length >= ControlFrame.CALL_ID_BYTES, "a REPLY without its call id");
                    if (framed) {
                        long callId = ControlFrame.callId(payload);
                        byte[] asked = requests.remove(callId);
                        assertTrue(asked != null, "a REPLY to call " + callId + ", never made");
                        assertArrayEquals(asked, Arrays.copyOfRange(payload, ControlFrame.CALL_ID_BYTES, payload.length),
                                "the REPLY is not the handler's answer");
                    }
                }
                case ControlFrame.ERROR -> {
                    // A refusal told before closing (type 0; a refusal of the client's versions: the server's
                    // highest), or a request's refusal (its type, then its call id).
                    boolean versions = new String(payload, StandardCharsets.UTF_8).startsWith(ProtocolVersions.REFUSAL);
                    if (versions) {
                        assertEquals(SPOKEN.highest(), type & 0xFF, "a version refusal's type byte");
                    } else if (type != 0) {
                        assertTrue(authenticated, "a request's ERROR to a peer that did not authenticate");
                        assertTrue(payload.length >= ControlFrame.CALL_ID_BYTES, "a request's ERROR without its call id");
                    }
                }
                default -> fail("the server wrote a frame of kind " + kind);
            }
        }
    }

    /** The next bytes the peer writes: a frame the input chooses, or raw bytes. */
    private static byte[] nextWrite(FuzzedDataProvider data, Session s) {
        switch (data.consumeInt(0, 7)) {
            case 0 -> { // an honest HELLO, of a client holding the secret or not, for the served application or another
                s.clientHoldsSecret = data.consumeBoolean();
                byte[] secret = s.clientHoldsSecret ? SECRET : Arrays.copyOf(data.consumeBytes(data.consumeInt(0, 32)), 32);
                String app = data.consumeBoolean() ? APP : data.consumeString(40);
                s.clientHoldsSecret &= app.equals(APP) && Arrays.equals(secret, SECRET);
                s.client = new ChallengeResponse.Client(secret, app);
                return hello(data, s, ControlFrame.HELLO, s.client.hello());
            }
            case 1 -> { // the honest RESPONSE of the last HELLO's client to the server's CHALLENGE
                if (s.client == null || s.challenge == null) {
                    return frame(ControlFrame.RESPONSE, (byte) 0, data.consumeBytes(data.consumeInt(0, 40)));
                }
                byte[] response = s.client.respond(s.challenge);
                if (s.clientHoldsSecret) {
                    s.proved = s.client;
                }
                return frame(ControlFrame.RESPONSE, (byte) 0, response);
            }
            case 2 -> { // a request: call id, then the body
                long callId = data.consumeLong();
                byte type = data.consumeBoolean() ? REFUSED_TYPE : data.consumeByte();
                byte[] body = data.consumeBytes(data.consumeInt(0, 256));
                if (type != REFUSED_TYPE) {
                    s.requests.put(callId, body);
                }
                return frame(ControlFrame.REQUEST, type, ControlFrame.withCallId(callId, body));
            }
            case 3 -> {
                return hello(data, s, ControlFrame.HELLO_UNAUTHENTICATED, data.consumeBytes(data.consumeInt(0, 300)));
            }
            case 4 -> { // any kind, type and payload (a REQUEST among them is not one the test recorded)
                s.framed = false;
                return frame(data.consumeByte(), data.consumeByte(), data.consumeBytes(data.consumeInt(0, 512)));
            }
            case 5 -> { // a length prefix that lies (too long, negative, short), then what follows
                s.framed = false;
                byte[] rest = data.consumeBytes(data.consumeInt(0, 64));
                return ByteBuffer.allocate(4 + rest.length).putInt(data.consumeInt()).put(rest).array();
            }
            case 6 -> { // a frame too short to have a kind and a type
                s.framed = false;
                return ByteBuffer.allocate(4 + 1).putInt(data.consumeInt(0, 1)).put(data.consumeByte()).array();
            }
            default -> {
                s.framed = false;
                return data.consumeBytes(data.consumeInt(0, 128));
            }
        }
    }

    /**
     * A HELLO of {@code kind} carrying {@code body}: offering this release's versions, version 3 alone (the
     * previous release's), or any type byte before the body as it is (an offer's lowest read from it).
     */
    private static byte[] hello(FuzzedDataProvider data, Session s, byte kind, byte[] body) {
        switch (data.consumeInt(0, 2)) {
            case 0 -> {
                s.expectedVersion = SPOKEN.highest();
                return frame(kind, SPOKEN.helloType(false), SPOKEN.helloPayload(false, body));
            }
            case 1 -> {
                s.expectedVersion = ProtocolVersions.ALONE;
                return frame(kind, SPOKEN.helloType(true), body);
            }
            default -> {
                s.expectedVersion = -1;
                return frame(kind, data.consumeByte(), body);
            }
        }
    }

    private static byte[] frame(byte kind, byte type, byte[] payload) {
        return ByteBuffer.allocate(4 + 2 + payload.length).putInt(2 + payload.length).put(kind).put(type).put(payload).array();
    }
}
