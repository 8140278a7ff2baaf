package org.rdmashuffle.core.server;

/** An output's index cannot be held: the heap its application, its user or the node may spend on indexes is taken. */
public final class IndexMemoryExhaustedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public IndexMemoryExhaustedException(String message) {
        super(message);
    }
}
