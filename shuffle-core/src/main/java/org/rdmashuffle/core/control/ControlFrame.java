package org.rdmashuffle.core.control;

/**
 * Control-plane frames: a 4-byte length, then {@code kind}, {@code type} and the payload. The
 * handshake kinds come first on every connection; REQUEST before AUTH_OK closes the connection.
 * A REQUEST's payload starts with the caller's 8-byte call id, which its REPLY or ERROR repeats: a
 * reply that comes after its call timed out is recognised as stale, never taken for the next call's.
 * The handshake's frames carry the control protocol version in their type byte, both ways: the
 * versions the client offers in its HELLO (or HELLO_UNAUTHENTICATED), the one the server chose in its
 * CHALLENGE and AUTH_OK ({@link ProtocolVersions}).
 */
final class ControlFrame {
    static final byte HELLO = 1;
    static final byte CHALLENGE = 2;
    static final byte RESPONSE = 3;
    static final byte AUTH_OK = 4;
    static final byte REQUEST = 5;
    static final byte REPLY = 6;
    static final byte ERROR = 7;
    /** A client that does not authenticate; accepted only by a server with authentication off. */
    static final byte HELLO_UNAUTHENTICATED = 8;

    static final int CALL_ID_BYTES = 8;

    private ControlFrame() {
    }

    static byte[] withCallId(long callId, byte[] payload) {
        return java.nio.ByteBuffer.allocate(CALL_ID_BYTES + payload.length).putLong(callId).put(payload).array();
    }

    /** The call id a REQUEST, REPLY or ERROR payload starts with (at least {@link #CALL_ID_BYTES} long). */
    static long callId(byte[] payload) {
        return java.nio.ByteBuffer.wrap(payload).getLong();
    }
}
