package org.rdmashuffle.core.protocol;

/** A received message could not be decoded or failed validation; the connection that sent it is closed. */
public final class MalformedMessageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public MalformedMessageException(String message) {
        super(message);
    }

    public MalformedMessageException(String message, Throwable cause) {
        super(message, cause);
    }
}
