package org.rdmashuffle.core.control;

/**
 * Control-plane frames: a 4-byte length, then {@code kind}, {@code type} and the payload. The
 * handshake kinds come first on every connection; REQUEST before AUTH_OK closes the connection.
 * A REQUEST's payload starts with the caller's 8-byte call id, which its REPLY or ERROR repeats: a
 * reply that comes after its call timed out is recognised as stale, never taken for the next call's.
 * The handshake's frames carry {@link #PROTOCOL_VERSION} in their type byte, both ways.
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

    /**
     * The control protocol's version (frames and the messages they carry), in the type byte of the
     * client's HELLO (or HELLO_UNAUTHENTICATED) and of the server's CHALLENGE and AUTH_OK: a server
     * refuses a client of another version with an ERROR naming both, a client a server of another.
     * A NodeManager's service and an application's executors may come from different releases;
     * without this a mismatch shows as a malformed message much later. Raise it when an encoding changes.
     * (0: the releases before it was sent; 2: the server proves itself last, a CONNECT reply carries the lease;
     * 3: CONNECT carries flags, the reply's saying whether its regions are read from page boundaries only.)
     */
    static final byte PROTOCOL_VERSION = 3;

    /** The ERROR text a server sends a client of protocol version {@code theirs}. */
    static String versionRefusal(int theirs) {
        return "rdma-shuffle control protocol version " + theirs + " is not spoken here (this side speaks version "
                + PROTOCOL_VERSION + "): run the same rdma-shuffle release on both sides";
    }

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
