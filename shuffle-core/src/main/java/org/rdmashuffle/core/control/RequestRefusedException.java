package org.rdmashuffle.core.control;

/**
 * A control request refused for a reason its peer may read: the control server sends this message
 * as it is. Any other exception a handler throws reaches the peer as a fixed phrase ("the request
 * failed"), its text going to the server's log only: a handler's message may name a path, a size or
 * another tenant's numbers.
 */
public final class RequestRefusedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public RequestRefusedException(String message) {
        super(message);
    }

    public RequestRefusedException(String message, Throwable cause) {
        super(message, cause);
    }
}
