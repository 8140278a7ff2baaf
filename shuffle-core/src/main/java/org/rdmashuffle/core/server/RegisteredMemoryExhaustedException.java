package org.rdmashuffle.core.server;

/** Registering a map output would exceed the configured limit, and nothing registered can be released. */
public final class RegisteredMemoryExhaustedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public RegisteredMemoryExhaustedException(String message) {
        super(message);
    }
}
