package org.rdmashuffle.core.control;

import java.io.IOException;

/**
 * The control connection to a peer closed without a word, or its handshake did not finish within the
 * timeout, before the peer answered: nothing was refused, and a new connection may ask again (what a
 * server under load does to the handshakes it cannot finish in time). A refusal the peer names (a
 * wrong secret, an application it does not admit, protocol versions, "busy") is never this.
 */
public final class ControlConnectionLostException extends IOException {
    private static final long serialVersionUID = 1L;

    ControlConnectionLostException(String message) {
        super(message);
    }

    ControlConnectionLostException(String message, Throwable cause) {
        super(message, cause);
    }
}
