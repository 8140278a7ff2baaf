package org.rdmashuffle.core.server;

/** The serving side has no map output by that id for that application: never written here, lost, or forgotten. */
public final class NoSuchMapOutputException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public NoSuchMapOutputException(String message) {
        super(message);
    }
}
