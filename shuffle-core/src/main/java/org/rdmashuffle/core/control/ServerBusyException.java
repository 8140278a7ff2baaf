package org.rdmashuffle.core.control;

import java.io.IOException;

/**
 * The peer's control plane refused a request because its queue for this application was full, or a
 * new connection because too many were waiting for their handshake: nothing was done, and it may be
 * asked again later (what a thousand reducers asking one server at a stage's start meet).
 */
public final class ServerBusyException extends IOException {
    /** What the server answers, word for word. */
    public static final String MESSAGE = "the server is busy: try again";

    ServerBusyException(String peer, byte type) {
        super(peer + " failed request type " + type + ": " + MESSAGE);
    }

    /** Refused at the handshake: too many connections were waiting for theirs. */
    ServerBusyException(String peer) {
        super(peer + " closed the connection before the handshake: " + MESSAGE);
    }
}
