package org.rdmashuffle.core.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

/** Both sides must know the secret; nothing recorded can be replayed; malformed messages are refused. */
class ChallengeResponseTest {
    private static final byte[] SECRET = "spark-app-secret-0123456789".getBytes(StandardCharsets.UTF_8);
    private static final byte[] OTHER = "a-different-secret-98765432".getBytes(StandardCharsets.UTF_8);

    @Test
    void peersWithTheSameSecretAuthenticateEachOther() {
        ChallengeResponse.Client client = new ChallengeResponse.Client(SECRET, "app-1");
        ChallengeResponse.Server server = new ChallengeResponse.Server(SECRET);
        server.verify(client.respond(server.challenge(client.hello())));
        assertTrue(client.authenticated());
        assertTrue(server.authenticated());
        assertEquals("app-1", server.appId());
    }

    @Test
    void aClientWithoutTheSecretIsRefused() {
        ChallengeResponse.Client impostor = new ChallengeResponse.Client(OTHER, "app-1");
        ChallengeResponse.Server server = new ChallengeResponse.Server(SECRET);
        byte[] challenge = server.challenge(impostor.hello());
        // The impostor cannot verify the server either, but even a response forged anyway fails.
        assertThrows(AuthenticationException.class, () -> impostor.respond(challenge));
        AuthenticationException e = assertThrows(AuthenticationException.class, () -> server.verify(new byte[32]));
        assertEquals("peer for application app-1 failed authentication", e.getMessage());
        assertFalse(server.authenticated());
        assertThrows(IllegalStateException.class, server::appId);
    }

    @Test
    void aServerWithoutTheSecretIsDetectedByTheClient() {
        ChallengeResponse.Client client = new ChallengeResponse.Client(SECRET, "app-1");
        ChallengeResponse.Server impostor = new ChallengeResponse.Server(OTHER);
        AuthenticationException e = assertThrows(AuthenticationException.class,
                () -> client.respond(impostor.challenge(client.hello())));
        assertTrue(e.getMessage().contains("does not know the secret"), e.getMessage());
        assertFalse(e.getMessage().contains(new String(SECRET, StandardCharsets.UTF_8)));
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
        assertThrows(IllegalArgumentException.class, () -> new ChallengeResponse.Server(new byte[4]), "short secret");
    }
}
