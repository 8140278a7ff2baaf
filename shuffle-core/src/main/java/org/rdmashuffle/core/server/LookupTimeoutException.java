package org.rdmashuffle.core.server;

/** Finding a map output on disk, or waiting for another request's registration of it, took longer than the lookup timeout. */
public final class LookupTimeoutException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public LookupTimeoutException(String message) {
        super(message);
    }
}
