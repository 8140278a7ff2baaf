package org.rdmashuffle.core.server;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Waiting for another thread's slow work (a search on disk, a registration of a file) for a request
 * that blocks: at most the lookup timeout, and its failure thrown here as it was there.
 */
final class SlowWork {
    private SlowWork() {
    }

    /**
     * What {@code work} came to, waited for at most {@code timeoutNanos}: LookupTimeoutException naming
     * {@code what} if it takes longer.
     */
    static <T> T await(CompletableFuture<T> work, long timeoutNanos, String what) {
        try {
            return work.get(timeoutNanos, TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new LookupTimeoutException(what + " took longer than " + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for " + what, e);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof RuntimeException cause ? cause : new IllegalStateException(e.getCause());
        }
    }
}
