package org.rdmashuffle.core.control;

/** A peer failed the control-plane handshake; nothing (no rkey, no data connection) is handed to it. */
public final class AuthenticationException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public AuthenticationException(String message) {
        super(message);
    }
}
