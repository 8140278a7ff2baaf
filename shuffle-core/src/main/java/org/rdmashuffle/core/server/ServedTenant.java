package org.rdmashuffle.core.server;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.transport.MemoryRegistration;
import org.rdmashuffle.core.transport.TenantDomain;
import org.rdmashuffle.verbs.VerbsContext;

/**
 * One application as the serving side knows it: its device resources ({@link TenantDomain}: PD, SRQ,
 * buffers) and, built on them, its outputs ({@link MapOutputRegistry}, with the bounds of its share
 * of the node) and what answers its reducers' requests ({@link FetchRequestHandler}). The registry is
 * given to the domain to close, after the SRQ and before the PD. An executor's engine has one, its
 * own ({@link MapOutputRegistry#OWN}); a node's service one per application ({@link Tenants}).
 * Immutable; its parts are thread-safe.
 */
public final class ServedTenant {
    private final TenantDomain domain;
    private final MapOutputRegistry registry;
    private final FetchRequestHandler requests;
    /** The windows its reducers read through; null when they read under the regions' own keys. */
    private final ServingWindows windows;

    /**
     * @param limits the service's resource model (an executor's engine: its own outputs bounded by bytes alone)
     * @param registeredMemory the engine's budget of registered map outputs, shared by its tenants
     * @param lookups where the registry's searches on disk run
     * @param windowUse whether its reducers read through memory windows bound per connection
     * @param usage where its windows are counted, per application, per user and for the node
     */
    ServedTenant(VerbsContext context, MemoryRegistration registration, org.rdmashuffle.core.transport.WindowUse windowUse,
                 int index, String app, String user, EngineConfig config, ServiceLimits limits, RegistryBudget registeredMemory,
                 OutputSearches.Lookups lookups, ServiceUsage usage) {
        this.domain = new TenantDomain(context, index, app, user, config, registration);
        try {
            // One application of many may hold only its share of the node's budget; an engine's own, all of it.
            RegistryLimits registryLimits = app.equals(MapOutputRegistry.OWN)
                    ? RegistryLimits.ofBytes(config.registeredMemoryLimit()) : limits.perApplication();
            this.registry = new MapOutputRegistry(domain.pd(), registration, registryLimits, registeredMemory, user,
                    limits.lease().toMillis(), limits.lookupTimeout().toMillis(), lookups);
        } catch (RuntimeException | Error e) {
            domain.close();
            throw e;
        }
        if (windowUse.on()) {
            this.windows = new ServingWindows(domain.pd(), app, usage, limits.lease().toNanos(), System::nanoTime);
            registry.readThroughWindows(windows);
            domain.adopt(() -> { // its connections are retired by now; windows before regions and the PD
                windows.close();
                return java.util.concurrent.CompletableFuture.completedFuture(null);
            });
        } else {
            this.windows = null;
        }
        domain.adopt(registry::closeAsync);
        this.requests = new FetchRequestHandler(registry);
    }

    /** Its device resources: what its connections' queue pairs and buffers are made on. */
    public TenantDomain domain() {
        return domain;
    }

    public MapOutputRegistry registry() {
        return registry;
    }

    /** The memory windows its reducers read through; null when they read under the regions' own keys. */
    public ServingWindows windows() {
        return windows;
    }

    public FetchRequestHandler requests() {
        return requests;
    }

    public String app() {
        return domain.app();
    }

    public String user() {
        return domain.user();
    }

    public int index() {
        return domain.index();
    }

    @Override
    public String toString() {
        return domain.toString();
    }
}
