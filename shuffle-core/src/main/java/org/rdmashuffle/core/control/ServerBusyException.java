package org.rdmashuffle.core.control;

import java.io.IOException;

/**
 * The peer's control plane refused a request because its queue for this application was full: the
 * request was not handled and may be sent again later (what a thousand reducers asking one server at
 * a stage's start meet).
 */
public final class ServerBusyException extends IOException {
    /** What the server answers, word for word. */
    static final String MESSAGE = "the server is busy: try again";

    ServerBusyException(String peer, byte type) {
        super(peer + " failed request type " + type + ": " + MESSAGE);
    }
}
