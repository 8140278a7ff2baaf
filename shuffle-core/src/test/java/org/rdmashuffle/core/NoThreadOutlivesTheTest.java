package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Checks that every thread of ours (named {@code rdma*}) an attack made the service, or the test's
 * engines, start has ended within 15 s of the test: nothing a tenant does leaves a thread behind.
 */
final class NoThreadOutlivesTheTest implements BeforeEachCallback, AfterEachCallback {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(NoThreadOutlivesTheTest.class);

    @Override
    public void beforeEach(ExtensionContext context) {
        context.getStore(NS).put("before", ourThreads());
    }

    @Override
    @SuppressWarnings("unchecked")
    public void afterEach(ExtensionContext context) throws InterruptedException {
        Set<Thread> before = (Set<Thread>) context.getStore(NS).get("before");
        long deadline = System.nanoTime() + 15_000_000_000L;
        while (true) {
            Set<Thread> left = ourThreads();
            left.removeAll(before);
            if (left.isEmpty()) {
                return;
            }
            assertTrue(System.nanoTime() < deadline, "threads still running 15 s after the test: "
                    + left.stream().map(Thread::getName).sorted().toList());
            Thread.sleep(20);
        }
    }

    private static Set<Thread> ourThreads() {
        Set<Thread> ours = new HashSet<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.isAlive() && t.getName().startsWith("rdma")) {
                ours.add(t);
            }
        }
        return ours;
    }
}
