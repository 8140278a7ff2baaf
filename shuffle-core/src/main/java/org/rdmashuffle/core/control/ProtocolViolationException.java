package org.rdmashuffle.core.control;

/**
 * A control request no peer of a version this server speaks sends (an unknown request type): the
 * peer is told this message, its connection is closed, and the log says so once a minute with a
 * count, never once per request. Thrown by a {@link ControlHandler}; any other failure of a handler
 * keeps the connection.
 */
public final class ProtocolViolationException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ProtocolViolationException(String message) {
        super(message);
    }
}
