package org.rdmashuffle.core.control;

import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * Where a {@link ControlServer} runs authenticated requests, never on its event loop: told the
 * application each request is for, so a scheduler can share its threads fairly among applications.
 */
@FunctionalInterface
public interface RequestScheduler {
    /** Runs requests on the event loop itself: for tests and handlers that never block. */
    RequestScheduler INLINE = (application, task) -> {
        task.run();
        return true;
    };

    /** Runs {@code task}, a request of {@code application}, now or later; false if it is refused (the peer is told "busy"). */
    boolean submit(String application, Runnable task);

    /** Any executor, taking no account of applications; a rejected task is refused. */
    static RequestScheduler of(Executor executor) {
        return (application, task) -> {
            try {
                executor.execute(task);
                return true;
            } catch (RejectedExecutionException full) {
                return false;
            }
        };
    }
}
