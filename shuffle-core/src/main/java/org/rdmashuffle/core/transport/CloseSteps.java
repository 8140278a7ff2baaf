package org.rdmashuffle.core.transport;

/**
 * The steps of a close, each attempted whatever the ones before did: one failure frees the rest.
 * Keeps the first failure, the later ones suppressed in it, for the caller to rethrow once every
 * step was attempted ({@link #rethrow}). Thread-safe (a close may end on another thread than it began).
 */
public final class CloseSteps {
    private Throwable first;

    /** Runs {@code step}; a failure is kept, not thrown. */
    public void attempt(Runnable step) {
        try {
            step.run();
        } catch (RuntimeException | Error e) {
            add(e);
        }
    }

    /** Keeps {@code e}: the first failure, or suppressed in it. */
    public synchronized void add(Throwable e) {
        if (first == null) {
            first = e;
        } else if (first != e) {
            first.addSuppressed(e);
        }
    }

    /** The first failure, with the others suppressed in it; null if every step succeeded. */
    public synchronized Throwable first() {
        return first;
    }

    /** Throws the first failure (the others suppressed in it), if any step failed. */
    public void rethrow() {
        Throwable f = first();
        if (f instanceof RuntimeException r) {
            throw r;
        }
        if (f instanceof Error e) {
            throw e;
        }
        if (f != null) {
            throw new IllegalStateException(f);
        }
    }
}
