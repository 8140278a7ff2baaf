package org.rdmashuffle.core.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

/**
 * Both sides must know the secret; nothing recorded can be replayed; the server proves itself only to
 * a client that proved itself; an application not served here looks like one that is; malformed
 * messages are refused.
 */
class ChallengeResponseTest {
    private static final byte[] SECRET = "spark-app-secret-0123456789".getBytes(StandardCharsets.UTF_8);
    private static final byte[] OTHER = "a-different-secret-98765432".getBytes(StandardCharsets.UTF_8);

    @Test
    void peersWithTheSameSecretAuthenticateEachOther() {
        ChallengeResponse.Client client = new ChallengeResponse.Client(SECRET, "app-1");
        ChallengeResponse.Server server = new ChallengeResponse.Server(SECRET);
        server.verify(client.respond(server.challenge(client.hello())));
        client.verifyServer(server.proof());
        assertTrue(client.authenticated());
        assertTrue(server.authenticated());
        assertEquals("app-1", server.appId());
    }

    @Test
    void aClientWithoutTheSecretIsRefused_andGetsNoProof() {
        ChallengeResponse.Client impostor = new ChallengeResponse.Client(OTHER, "app-1");
        ChallengeResponse.Server server = new ChallengeResponse.Server(SECRET);
        byte[] response = impostor.respond(server.challenge(impostor.hello()));
        AuthenticationException e = assertThrows(AuthenticationException.class, () -> server.verify(response));
        assertEquals("peer for application app-1 failed authentication", e.getMessage());
        assertFalse(server.authenticated());
        assertThrows(IllegalStateException.class, server::appId);
        assertThrows(IllegalStateException.class, server::proof, "the server proves nothing to a peer that proved nothing");
    }

    /**
     * The attack on the old handshake: a peer holding no secret sent a HELLO with a nonce of its
     * choosing and got back HMAC(secret, ..., its nonce, ...): an oracle over the secret. Now the
     * challenge is the server's nonce alone, whatever the hello says.
     */
    @Test
    void aPeerWithoutTheSecretGetsNoProofOverANonceOfItsChoice() {
        ChallengeResponse.Client attacker = new ChallengeResponse.Client(OTHER, "app-1");
        byte[] hello = attacker.hello();
        byte[] first = new ChallengeResponse.Server(SECRET).challenge(hello);
        byte[] second = new ChallengeResponse.Server(SECRET).challenge(hello);
        assertEquals(ChallengeResponse.NONCE, first.length, "a nonce, nothing computed from the secret");
        assertFalse(java.util.Arrays.equals(first, second), "fresh each time, whatever the hello");
    }

    /** Which applications a node serves is not told to a peer that holds none of their secrets. */
    @Test
    void anApplicationNotServedHereIsChallengedLikeOneThatIs_andRefusedAlike() {
        ChallengeResponse.Client client = new ChallengeResponse.Client(OTHER, "app-unknown");
        ChallengeResponse.Server notServed = new ChallengeResponse.Server(null);
        byte[] challenge = notServed.challenge(client.hello());
        assertEquals(ChallengeResponse.NONCE, challenge.length);
        AuthenticationException e = assertThrows(AuthenticationException.class, () -> notServed.verify(client.respond(challenge)));
        assertEquals("peer for application app-unknown failed authentication", e.getMessage(), "as for a wrong secret");
    }

    @Test
    void aServerWithoutTheSecretIsDetectedByTheClient() {
        ChallengeResponse.Client client = new ChallengeResponse.Client(SECRET, "app-1");
        ChallengeResponse.Server impostor = new ChallengeResponse.Server(OTHER);
        byte[] response = client.respond(impostor.challenge(client.hello()));
        assertThrows(AuthenticationException.class, () -> impostor.verify(response), "the impostor cannot check us");
        // It cannot make the proof the client expects: whatever it answers AUTH_OK with is refused.
        byte[] forged = new byte[ChallengeResponse.MAC];
        new java.util.Random(7).nextBytes(forged);
        AuthenticationException e = assertThrows(AuthenticationException.class, () -> client.verifyServer(forged));
        assertTrue(e.getMessage().contains("does not know the secret"), e.getMessage());
        assertFalse(e.getMessage().contains(new String(SECRET, StandardCharsets.UTF_8)));
        assertFalse(client.authenticated());
    }

    @Test
    void aRecordedResponseCannotBeReplayedToANewServer() {
        ChallengeResponse.Client client = new ChallengeResponse.Client(SECRET, "app-1");
        ChallengeResponse.Server first = new ChallengeResponse.Server(SECRET);
        byte[] hello = client.hello();
        byte[] recorded = client.respond(first.challenge(hello));
        first.verify(recorded);
        ChallengeResponse.Server second = new ChallengeResponse.Server(SECRET);
        second.challenge(hello); // the attacker replays the hello...
        assertThrows(AuthenticationException.class, () -> second.verify(recorded)); // ...and the response: new nonce, refused
    }

    @Test
    void malformedMessagesAreRefused() {
        ChallengeResponse.Server server = new ChallengeResponse.Server(SECRET);
        assertThrows(AuthenticationException.class, () -> server.verify(new byte[32]), "response before hello");
        assertThrows(AuthenticationException.class, () -> server.challenge(new byte[3]));
        byte[] lying = new byte[2 + 32];
        lying[0] = (byte) 0x7F; // claims a 32 KiB application id
        assertTrue(assertThrows(AuthenticationException.class, () -> server.challenge(lying)).getMessage()
                .contains("malformed hello"));
        ChallengeResponse.Client client = new ChallengeResponse.Client(SECRET, "app-1");
        assertThrows(AuthenticationException.class, () -> client.respond(new byte[10]));
        assertThrows(AuthenticationException.class, () -> client.verifyServer(new byte[32]), "a proof before the challenge");
        client.respond(new byte[ChallengeResponse.NONCE]);
        assertThrows(AuthenticationException.class, () -> client.verifyServer(new byte[5]));
        assertThrows(IllegalArgumentException.class, () -> new ChallengeResponse.Server(new byte[4]), "short secret");
    }
}
