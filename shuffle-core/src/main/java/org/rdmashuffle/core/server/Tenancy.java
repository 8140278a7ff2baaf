package org.rdmashuffle.core.server;

import java.util.function.Function;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.transport.TransportContext;

/**
 * Whose outputs a {@link ServeService} serves: the one thing an executor's engine and a node's
 * shuffle service do differently on the serving side. An executor's engine serves its own
 * application's outputs ({@link Own}: one tenant, made at start, filled by the engine's own map
 * tasks); a node's service serves many applications' ({@link Node}: a tenant per application, made
 * at its first output or connection, its unregistered outputs searched for on the node's disks by
 * lookup threads of its own, bounded per user). The calls only one of them answers are refused by the
 * other with a message naming the right one.
 */
abstract sealed class Tenancy permits Tenancy.Own, Tenancy.Node {
    final Tenants tenants;

    private Tenancy(Tenants tenants) {
        this.tenants = tenants;
    }

    static Tenancy of(boolean service, EngineConfig config, ServiceLimits limits, TransportContext transport,
                      Function<String, String> userOf, ServiceUsage usage) {
        return service ? Node.start(config, limits, transport, userOf, usage) : Own.start(config, limits, transport, userOf, usage);
    }

    /** The tenant of {@code app}, made at its first output or connection; an executor's engine has only its own. */
    abstract ServedTenant tenant(String app);

    /** An executor's engine's own tenant; refused by a node's service. */
    abstract ServedTenant own();

    /** Refuses, in an executor's engine, what only a node's service does (serve other applications). */
    abstract void requireNode();

    /** Who finds outputs nobody registered. */
    abstract void resolver(MapOutputRegistry.Resolver resolver);

    /** No new searches; one waiting on a disk keeps its thread, and nothing waits for it. */
    abstract void stopThreads();

    /** What it made, freed when the service fails to start. */
    abstract void closeOnFailedStart();

    static final class Own extends Tenancy {
        private final ServedTenant own;

        private Own(Tenants tenants) {
            super(tenants);
            this.own = tenants.of(MapOutputRegistry.OWN);
        }

        private static Own start(EngineConfig config, ServiceLimits limits, TransportContext transport,
                                 Function<String, String> userOf, ServiceUsage usage) {
            return new Own(new Tenants(transport.context(), config, limits, false, userOf, usage,
                    app -> OutputSearches.Lookups.INLINE, transport.profile().cqEntries(),
                    transport.profile().registration(), transport.profile().windows()));
        }

        @Override
        ServedTenant tenant(String app) {
            return own;
        }

        @Override
        ServedTenant own() {
            return own;
        }

        @Override
        void requireNode() {
            throw new IllegalStateException("only a shuffle service's engine (startService) serves other applications");
        }

        @Override
        void resolver(MapOutputRegistry.Resolver resolver) {
            own.registry().resolver(resolver);
        }

        @Override
        void stopThreads() {
        }

        @Override
        void closeOnFailedStart() {
            own.domain().close();
        }
    }

    static final class Node extends Tenancy {
        /** Searches of the node's disks for outputs nobody registered, one of a user at a time. */
        private final FairThreads lookups;

        private Node(Tenants tenants, FairThreads lookups) {
            super(tenants);
            this.lookups = lookups;
        }

        private static Node start(EngineConfig config, ServiceLimits limits, TransportContext transport,
                                  Function<String, String> userOf, ServiceUsage usage) {
            FairThreads lookups = new FairThreads("rdma-shuffle-lookup", ServiceLimits.LOOKUP_THREADS,
                    ServiceLimits.LOOKUP_QUEUE_PER_APPLICATION, 1, limits.lookupThreadsPerUser());
            try {
                return new Node(new Tenants(transport.context(), config, limits, true, userOf, usage,
                        app -> search -> lookups.submit(app, userOf.apply(app), search), transport.profile().cqEntries(),
                        transport.profile().registration(), transport.profile().windows()),
                        lookups);
            } catch (RuntimeException | Error e) {
                lookups.close();
                throw e;
            }
        }

        @Override
        ServedTenant tenant(String app) {
            return tenants.of(app);
        }

        @Override
        ServedTenant own() {
            throw new IllegalStateException("a shuffle service's engine serves applications' outputs: name the application");
        }

        @Override
        void requireNode() {
        }

        @Override
        void resolver(MapOutputRegistry.Resolver resolver) {
            tenants.resolver(resolver);
        }

        @Override
        void stopThreads() {
            lookups.close();
        }

        @Override
        void closeOnFailedStart() {
            lookups.close();
        }
    }
}
