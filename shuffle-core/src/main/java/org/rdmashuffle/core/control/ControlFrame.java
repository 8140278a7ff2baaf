package org.rdmashuffle.core.control;

/**
 * Control-plane frames: a 4-byte length, then {@code kind}, {@code type} and the payload. The
 * handshake kinds come first on every connection; REQUEST before AUTH_OK closes the connection.
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

    private ControlFrame() {
    }
}
