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
 * server → client  CHALLENGE  serverNonce, HMAC(secret, "server" | appId | clientNonce | serverNonce)
 * client → server  RESPONSE   HMAC(secret, "client" | appId | serverNonce | clientNonce)
 * </pre>
 * Each side proves it knows the secret over nonces the other chose fresh (32 random bytes), so a
 * recorded exchange cannot be replayed, and the secret never crosses the wire. Proofs are compared
 * in constant time. Messages are bounded and parsed strictly; anything else is an
 * {@link AuthenticationException} that never contains the secret.
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

        /** Checks the server's CHALLENGE and returns the RESPONSE; throws if the server does not know the secret. */
        public byte[] respond(byte[] challenge) {
            if (challenge == null || challenge.length != NONCE + MAC) {
                throw new AuthenticationException("malformed challenge from the server");
            }
            serverNonce = java.util.Arrays.copyOfRange(challenge, 0, NONCE);
            byte[] proof = java.util.Arrays.copyOfRange(challenge, NONCE, NONCE + MAC);
            if (!MessageDigest.isEqual(proof, mac(secret, "server", appId, clientNonce, serverNonce))) {
                throw new AuthenticationException("the server for application " + appId + " does not know the secret");
            }
            done = true;
            return mac(secret, "client", appId, serverNonce, clientNonce);
        }

        public boolean authenticated() {
            return done;
        }
    }

    /** The side that accepts. */
    public static final class Server {
        private final byte[] secret;
        private final byte[] serverNonce = nonce();
        private String appId;
        private byte[] clientNonce;
        private boolean done;

        public Server(byte[] secret) {
            this.secret = checkSecret(secret).clone();
        }

        /** Reads HELLO and returns the CHALLENGE. */
        public byte[] challenge(byte[] hello) {
            if (hello == null || hello.length < 2 + NONCE) {
                throw new AuthenticationException("malformed hello");
            }
            ByteBuffer in = ByteBuffer.wrap(hello);
            int idLength = in.getShort() & 0xFFFF;
            if (idLength > MAX_APP_ID || hello.length != 2 + idLength + NONCE) {
                throw new AuthenticationException("malformed hello: application id of " + idLength + " bytes in "
                        + hello.length + " bytes");
            }
            byte[] id = new byte[idLength];
            in.get(id);
            appId = new String(id, StandardCharsets.UTF_8);
            clientNonce = new byte[NONCE];
            in.get(clientNonce);
            return ByteBuffer.allocate(NONCE + MAC).put(serverNonce)
                    .put(mac(secret, "server", appId, clientNonce, serverNonce)).array();
        }

        /** Checks the RESPONSE; after this returns the peer is authenticated for {@link #appId()}. */
        public void verify(byte[] response) {
            if (clientNonce == null) {
                throw new AuthenticationException("response before hello");
            }
            if (response == null || response.length != MAC
                    || !MessageDigest.isEqual(response, mac(secret, "client", appId, serverNonce, clientNonce))) {
                throw new AuthenticationException("peer for application " + appId + " failed authentication");
            }
            done = true;
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
