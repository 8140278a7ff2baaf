package org.rdmashuffle.core.control;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Mutual challenge-response over a shared secret (Spark's {@code spark.authenticate.secret},
 * Hadoop's job token), transport-independent so the control plane only moves its bytes:
 * <pre>
 * client → server  HELLO      appId, clientNonce
 * server → client  CHALLENGE  serverNonce
 * client → server  RESPONSE   HMAC(secret, "client" | appId | serverNonce | clientNonce)
 * server → client  AUTH_OK    HMAC(secret, "server" | appId | clientNonce | serverNonce)
 * </pre>
 * Each side proves it knows the secret over nonces the other chose fresh (32 random bytes), so a
 * recorded exchange cannot be replayed, and the secret never crosses the wire. The server proves
 * itself only to a client that proved itself first, and answers a HELLO for an application it does
 * not serve exactly as one for an application it does (a challenge; then the same refusal a wrong
 * secret gets): a peer holding no secret learns neither a proof over a nonce of its choice nor which
 * applications a node serves. Proofs are compared in constant time. Messages are bounded and parsed
 * strictly; anything else is an {@link AuthenticationException} that never contains the secret.
 */
public final class ChallengeResponse {
    static final int NONCE = 32;
    static final int MAC = 32;
    static final int MAX_APP_ID = 256;
    private static final SecureRandom RANDOM = new SecureRandom();

    private ChallengeResponse() {
    }

    /** The side that connects. */
    public static final class Client {
        private final byte[] secret;
        private final String appId;
        private final byte[] clientNonce = nonce();
        private byte[] serverNonce;
        private boolean done;

        public Client(byte[] secret, String appId) {
            this.secret = checkSecret(secret).clone();
            this.appId = checkAppId(appId);
        }

        /** HELLO: appId and a fresh nonce. */
        public byte[] hello() {
            byte[] id = appId.getBytes(StandardCharsets.UTF_8);
            return ByteBuffer.allocate(2 + id.length + NONCE).putShort((short) id.length).put(id).put(clientNonce).array();
        }

        /** Reads the server's CHALLENGE and returns the RESPONSE: this side's proof. */
        public byte[] respond(byte[] challenge) {
            if (challenge == null || challenge.length != NONCE) {
                throw new AuthenticationException("malformed challenge from the server");
            }
            serverNonce = challenge.clone();
            return mac(secret, "client", appId, serverNonce, clientNonce);
        }

        /** Checks the server's proof (its AUTH_OK); throws if the server does not know the secret. */
        public void verifyServer(byte[] proof) {
            if (serverNonce == null) {
                throw new AuthenticationException("the server's proof came before its challenge");
            }
            if (proof == null || proof.length != MAC
                    || !MessageDigest.isEqual(proof, mac(secret, "server", appId, clientNonce, serverNonce))) {
                throw new AuthenticationException("the server for application " + appId + " does not know the secret");
            }
            done = true;
        }

        public boolean authenticated() {
            return done;
        }
    }

    /** The side that accepts. */
    public static final class Server {
        private final byte[] secret;
        /** Whether the secret is the application's, or a stand-in for one this node does not serve. */
        private final boolean known;
        private final byte[] serverNonce = nonce();
        private String appId;
        private byte[] clientNonce;
        private boolean done;

        /** @param secret the application's secret; null for an application this node does not serve (it never authenticates) */
        public Server(byte[] secret) {
            this.known = secret != null;
            this.secret = known ? checkSecret(secret).clone() : nonce();
        }

        /** Reads HELLO and returns the CHALLENGE, the same whether the application is served here or not. */
        public byte[] challenge(byte[] hello) {
            appId = appIdOf(hello);
            clientNonce = java.util.Arrays.copyOfRange(hello, hello.length - NONCE, hello.length);
            return serverNonce.clone();
        }

        /**
         * Checks the RESPONSE; after this returns the peer is authenticated for {@link #appId()}, and
         * {@link #proof()} is this side's answer (AUTH_OK). A wrong proof and an application not served
         * here fail alike, after the same work.
         */
        public void verify(byte[] response) {
            if (clientNonce == null) {
                throw new AuthenticationException("response before hello");
            }
            byte[] expected = mac(secret, "client", appId, serverNonce, clientNonce);
            if (response == null || response.length != MAC || !MessageDigest.isEqual(response, expected) || !known) {
                throw new AuthenticationException("peer for application " + appId + " failed authentication");
            }
            done = true;
        }

        /** This side's proof, for a peer that proved itself. */
        public byte[] proof() {
            if (!done) {
                throw new IllegalStateException("not authenticated");
            }
            return mac(secret, "server", appId, clientNonce, serverNonce);
        }

        public boolean authenticated() {
            return done;
        }

        /** The application the peer authenticated for (valid after {@link #verify}). */
        public String appId() {
            if (!done) {
                throw new IllegalStateException("not authenticated");
            }
            return appId;
        }
    }

    /** The application id a HELLO names, to look up that application's secret before answering it. */
    public static String appIdOf(byte[] hello) {
        if (hello == null || hello.length < 2 + NONCE) {
            throw new AuthenticationException("malformed hello");
        }
        int idLength = ((hello[0] & 0xFF) << 8) | (hello[1] & 0xFF);
        if (idLength > MAX_APP_ID || hello.length != 2 + idLength + NONCE) {
            throw new AuthenticationException("malformed hello: application id of " + idLength + " bytes in "
                    + hello.length + " bytes");
        }
        return new String(hello, 2, idLength, StandardCharsets.UTF_8);
    }

    private static byte[] nonce() {
        byte[] n = new byte[NONCE];
        RANDOM.nextBytes(n);
        return n;
    }

    private static byte[] checkSecret(byte[] secret) {
        if (secret == null || secret.length < 16) {
            throw new IllegalArgumentException("the shared secret must have at least 16 bytes");
        }
        return secret;
    }

    private static String checkAppId(String appId) {
        if (appId == null || appId.getBytes(StandardCharsets.UTF_8).length > MAX_APP_ID) {
            throw new IllegalArgumentException("application id missing or over " + MAX_APP_ID + " bytes");
        }
        return appId;
    }

    private static byte[] mac(byte[] secret, String role, String appId, byte[] first, byte[] second) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            mac.update(role.getBytes(StandardCharsets.US_ASCII));
            byte[] id = appId.getBytes(StandardCharsets.UTF_8);
            mac.update(ByteBuffer.allocate(4).putInt(id.length).array());
            mac.update(id);
            mac.update(first);
            mac.update(second);
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is not available in this JVM", e);
        }
    }
}
