package org.rdmashuffle.core.server;

/** This application already has its share of some bounded queue of the server's waiting: the reducer may try again. */
public final class ServerBusyRefusal extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ServerBusyRefusal(String message) {
        super(message);
    }
}
