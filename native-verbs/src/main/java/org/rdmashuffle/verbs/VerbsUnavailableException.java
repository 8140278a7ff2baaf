package org.rdmashuffle.verbs;

/** The provider cannot run here (no library, no device, no active port, memlock too low). */
public final class VerbsUnavailableException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public VerbsUnavailableException(String message) {
        super(message);
    }
}
