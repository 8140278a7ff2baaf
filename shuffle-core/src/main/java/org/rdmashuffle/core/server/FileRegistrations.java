package org.rdmashuffle.core.server;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

import org.rdmashuffle.core.transport.MemoryRegistration;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.ProtectionDomain;

/**
 * The registrations of one {@link MapOutputRegistry}'s files: each started under the registry's lock
 * with its bytes reserved ({@link #start}), run outside it by the request that started it ({@link
 * #run}; ibv_reg_mr pins, and so reads, every page), and finished under the lock again, where the
 * region is kept only if its output is still wanted. Other requests for the same output wait on the
 * output's {@code registration}; closing the registry waits for all of them ({@link #allUnderWay}).
 *
 * <p>Shares the registry's lock (the registry is the monitor): the set under way and the count are
 * guarded by it.
 */
final class FileRegistrations {
    private final MapOutputRegistry registry;
    private final ProtectionDomain pd;
    private final MemoryRegistration memory;
    private final RegisteredRegions regions;
    private final IndexCache indexes;
    private final Set<CompletableFuture<Void>> underWay = new HashSet<>();
    private long completed;
    /** Registrations done and failed, their bytes and time: the operators' figures (shared with the regions' evictions). Lock-free. */
    private final org.rdmashuffle.core.metrics.RegistrationCounts counts;
    /** Tests: runs before each registration, on the registering thread (to make one take as long as a test needs). */
    private volatile Runnable beforeRegistering = () -> { };

    FileRegistrations(MapOutputRegistry registry, ProtectionDomain pd, MemoryRegistration registration, RegisteredRegions regions,
                      IndexCache indexes, org.rdmashuffle.core.metrics.RegistrationCounts counts) {
        this.registry = registry;
        this.counts = counts;
        this.pd = pd;
        this.memory = registration;
        this.regions = regions;
        this.indexes = indexes;
    }

    /** Under the lock, {@code out}'s bytes reserved: it is being registered; others wait on what this returns. */
    CompletableFuture<Void> start(MapOutput out) {
        out.registration = new CompletableFuture<>();
        indexes.busy(out); // not to be forgotten while its file is registered
        underWay.add(out.registration);
        return out.registration;
    }

    /** Registers {@code out}'s file, outside the lock. Completes its registration either way; throws its failure. */
    void run(MapOutput out, CompletableFuture<Void> registration) {
        MemoryRegion region = null;
        RuntimeException failure = null;
        beforeRegistering.run();
        long start = System.nanoTime();
        try {
            region = out.registerFile(pd, memory, registry.windowAccess());
            counts.registered(out.size(), System.nanoTime() - start);
        } catch (IOException e) {
            failure = new UncheckedIOException("cannot map " + out.dataFile + " for registration: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            failure = e;
        }
        if (failure != null) {
            counts.failed(failure);
        }
        synchronized (registry) {
            out.registration = null;
            underWay.remove(registration);
            boolean wanted = !out.released && !registry.isClosed();
            if (failure == null && wanted) {
                out.region = region;
                regions.added(out);
                completed++;
                region = null;
            } else {
                regions.unreserve(out); // give the reservation back
                if (out.resolved && wanted) {
                    indexes.idle(out);
                }
            }
        }
        if (region != null) {
            region.close(); // its output was forgotten while it was being registered
        }
        if (failure != null) {
            registration.completeExceptionally(failure);
            throw failure;
        }
        registration.complete(null);
    }

    /** Under the lock: completes when every registration under way now has ended, however it ended. */
    CompletableFuture<Void> allUnderWay() {
        return CompletableFuture.allOf(underWay.stream().map(r -> r.handle((ok, failed) -> null))
                .toArray(CompletableFuture[]::new));
    }

    /** Under the lock: registrations that kept their region, since creation. */
    long completed() {
        return completed;
    }

    /** Registrations done and failed, and regions evicted, since creation (read without the lock). */
    org.rdmashuffle.core.metrics.RegistrationCounts.Snapshot counts() {
        return counts.snapshot();
    }

    void beforeRegistering(Runnable hook) {
        beforeRegistering = hook;
    }
}
