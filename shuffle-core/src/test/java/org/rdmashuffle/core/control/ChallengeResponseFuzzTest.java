package org.rdmashuffle.core.control;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;

/**
 * The handshake's messages as either side reads them from the other: {@link ChallengeResponse#appIdOf} and
 * {@link ChallengeResponse.Server#challenge}/{@link ChallengeResponse.Server#verify} read a client's HELLO and
 * RESPONSE, {@link ChallengeResponse.Client#respond}/{@link ChallengeResponse.Client#verifyServer} a server's
 * CHALLENGE and AUTH_OK. Contract: malformed or wrong bytes are an {@link AuthenticationException} and nothing
 * else; a peer is authenticated only with the proof of a client that holds the application's secret, for an
 * application the server serves, over the server's own challenge; and the honest exchange always succeeds.
 * The input chooses, at each step, the honest message or bytes of its own. docs/fuzzing.md
 */
class ChallengeResponseFuzzTest {
    private static final byte[] SECRET = "0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    @FuzzTest
    void handshake(FuzzedDataProvider data) {
        boolean clientHoldsSecret = data.consumeBoolean();
        byte[] clientSecret = clientHoldsSecret ? SECRET : otherSecret(data);
        String appId = data.consumeBoolean() ? "app-1" : data.consumeString(80);
        boolean served = data.consumeBoolean();
        ChallengeResponse.Client client = new ChallengeResponse.Client(clientSecret, appId);
        ChallengeResponse.Server server = new ChallengeResponse.Server(served ? SECRET : null);

        // HELLO: the client's, or the peer's own bytes.
        boolean honestHello = data.consumeBoolean();
        byte[] hello = honestHello ? client.hello() : bytes(data, 2 + ChallengeResponse.MAX_APP_ID + 64);
        String named = appIdOf(hello);
        if (honestHello) {
            assertNotNull(named, "an honest hello is refused");
        }
        byte[] challenge;
        try {
            challenge = server.challenge(hello);
        } catch (AuthenticationException refused) {
            assertNull(named, "challenge() refused a hello appIdOf() read");
            assertThrows(AuthenticationException.class, () -> server.verify(bytes(data, 64)), "a response before any hello");
            assertUnauthenticated(server);
            return;
        }
        assertNotNull(named, "challenge() took a hello appIdOf() refused");
        assertEquals(ChallengeResponse.NONCE, challenge.length);

        // CHALLENGE as the client reads it: the server's, or the peer's own bytes.
        boolean honestChallenge = data.consumeBoolean();
        byte[] toClient = honestChallenge ? challenge : bytes(data, 64);
        byte[] response = null;
        try {
            response = client.respond(toClient);
            assertEquals(ChallengeResponse.MAC, response.length);
        } catch (AuthenticationException refused) {
            assertFalse(toClient.length == ChallengeResponse.NONCE, "a challenge of the right length refused");
        }

        // RESPONSE as the server reads it: the client's, a changed one, or the peer's own bytes.
        byte[] toServer = switch (response == null ? 2 : data.consumeInt(0, 2)) {
            case 0 -> response;
            case 1 -> flipOneBit(response, data);
            default -> bytes(data, 64);
        };
        boolean authenticated;
        try {
            server.verify(toServer);
            authenticated = true;
        } catch (AuthenticationException refused) {
            authenticated = false;
        }
        boolean honest = honestHello && honestChallenge && response != null && Arrays.equals(toServer, response);
        if (authenticated) {
            if (!served || !clientHoldsSecret || response == null || !Arrays.equals(toServer, response) || !honestChallenge) {
                fail("authenticated without the secret's proof over the server's challenge: served " + served
                        + ", client holds the secret " + clientHoldsSecret + ", honest challenge " + honestChallenge
                        + ", the client's response " + (response != null && Arrays.equals(toServer, response)));
            }
        } else {
            assertFalse(honest && served && clientHoldsSecret, "the honest exchange failed");
            assertUnauthenticated(server);
            return;
        }
        assertTrue(server.authenticated());
        assertEquals(named, server.appId());

        // AUTH_OK as the client reads it: the server's proof, or the peer's own bytes.
        byte[] proof = server.proof();
        assertEquals(ChallengeResponse.MAC, proof.length);
        byte[] toClientProof = data.consumeBoolean() ? proof : bytes(data, 64);
        try {
            client.verifyServer(toClientProof);
            assertArrayEquals(proof, toClientProof, "the client took a proof that is not the server's");
            assertTrue(client.authenticated());
        } catch (AuthenticationException refused) {
            assertFalse(Arrays.equals(proof, toClientProof), "the client refused the server's own proof");
            assertFalse(client.authenticated());
        }
    }

    /** {@link ChallengeResponse#appIdOf}, which refuses only with an AuthenticationException; null when it does. */
    private static String appIdOf(byte[] hello) {
        String id;
        try {
            id = ChallengeResponse.appIdOf(hello);
        } catch (AuthenticationException refused) {
            return null;
        }
        int length = ((hello[0] & 0xFF) << 8) | (hello[1] & 0xFF);
        assertTrue(length <= ChallengeResponse.MAX_APP_ID, "an application id of " + length + " bytes");
        assertEquals(2 + length + ChallengeResponse.NONCE, hello.length);
        assertEquals(new String(hello, 2, length, StandardCharsets.UTF_8), id);
        return id;
    }

    private static void assertUnauthenticated(ChallengeResponse.Server server) {
        assertFalse(server.authenticated());
        assertThrows(IllegalStateException.class, server::proof, "a proof for an unauthenticated peer");
        assertThrows(IllegalStateException.class, server::appId);
    }

    /** At most {@code max} bytes, as many as the input says first (so the bytes never eat the choices after them). */
    private static byte[] bytes(FuzzedDataProvider data, int max) {
        return data.consumeBytes(data.consumeInt(0, max));
    }

    private static byte[] otherSecret(FuzzedDataProvider data) {
        byte[] s = Arrays.copyOf(bytes(data, 32), 32);
        if (Arrays.equals(s, SECRET)) {
            s[0] ^= 1;
        }
        return s;
    }

    private static byte[] flipOneBit(byte[] bytes, FuzzedDataProvider data) {
        byte[] b = bytes.clone();
        int bit = data.consumeInt(0, b.length * 8 - 1);
        b[bit / 8] ^= (byte) (1 << (bit % 8));
        return b;
    }
}
