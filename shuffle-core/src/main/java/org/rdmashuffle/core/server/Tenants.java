package org.rdmashuffle.core.server;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.metrics.RegistrationCounts;
import org.rdmashuffle.core.metrics.ServedCounts;
import org.rdmashuffle.core.transport.TenantDomain;
import org.rdmashuffle.core.transport.TransportContext;
import org.rdmashuffle.verbs.VerbsContext;

/**
 * The engine's {@link ServedTenant}s (each over its {@link TenantDomain}): by application, and by the index receive wr_ids carry (so a
 * completion finds its pool even after its connection went). An executor's engine has one tenant,
 * its own, made at start; a service makes one per application when first needed, admitted only while
 * every tenant's receive and send buffers still fit a completion queue (all of them may complete
 * into one), a user's applications at most half of those, and its pools' registered bytes fit its
 * user's and the node's registered-memory budget; counted ({@link ServiceUsage}) until its device
 * resources are freed, and given back then to the user it was charged to. Indices are never reused. An application that stopped is remembered (the last {@value
 * #STOPPED_REMEMBERED}) and never gets a tenant again: a CONNECT on a control session of its that
 * outlived the stop is refused instead of building fresh resources nothing would remove. Thread-safe.
 */
public final class Tenants implements TransportContext.TenantIndex {
    /** Guards the figures of tenants removed since start (kept in the node's totals). */
    private final Object retired = new Object();
    private ServedCounts.Snapshot retiredServed = ServedCounts.Snapshot.NONE;
    private RegistrationCounts.Snapshot retiredRegistrations = RegistrationCounts.Snapshot.NONE;
    /** Stopped applications remembered: far more than a node runs between two restarts of its service. */
    static final int STOPPED_REMEMBERED = 1 << 16;

    private final VerbsContext context;
    private final EngineConfig config;
    private final ServiceLimits limits;
    private final java.util.function.Function<String, String> userOf;
    /** Where tenants (per user and for the node) and their windows are counted, each with the user charged. */
    private final ServiceUsage usage;
    /** Whether tenants are a node's applications: then their pools count in the registered-memory budget too. */
    private final boolean service;
    private final java.util.function.Function<String, OutputSearches.Lookups> lookups;
    private final int cqEntries;
    /** What registries hold across tenants: the node's limits, and each user's. */
    private final RegistryBudget registeredMemory;
    /** Guarded by {@link #byApp}. */
    private final Map<String, ServedTenant> byApp = new HashMap<>();
    /** Applications stopped, oldest first; guarded by {@link #byApp}. */
    private final java.util.LinkedHashSet<String> stopped = new java.util.LinkedHashSet<>();
    private final Map<Integer, ServedTenant> byIndex = new ConcurrentHashMap<>();
    private final AtomicInteger ids = new AtomicInteger();
    private volatile MapOutputRegistry.Resolver resolver;
    private boolean closed;

    /** How every tenant's memory is registered (the engine's one choice). */
    private final org.rdmashuffle.core.transport.MemoryRegistration registration;
    /** Whether every tenant's reducers read through memory windows (the engine's one choice). */
    private final org.rdmashuffle.core.transport.WindowUse windowUse;

    /**
     * @param service whether tenants are applications of a node's service (bounded per user too), or
     *        an executor's engine's own
     * @param userOf an application's user
     * @param lookups where an application's registry searches the disks
     * @param windowUse whether tenants' reducers read through memory windows
     */
    public Tenants(VerbsContext context, EngineConfig config, ServiceLimits limits, boolean service,
                   java.util.function.Function<String, String> userOf, ServiceUsage usage,
                   java.util.function.Function<String, OutputSearches.Lookups> lookups, int cqEntries,
                   org.rdmashuffle.core.transport.MemoryRegistration registration,
                   org.rdmashuffle.core.transport.WindowUse windowUse) {
        this.context = context;
        this.registration = registration;
        this.windowUse = windowUse;
        this.config = config;
        this.limits = limits;
        this.userOf = userOf;
        this.usage = usage;
        this.service = service;
        this.lookups = lookups;
        this.cqEntries = cqEntries;
        this.registeredMemory = new RegistryBudget(limits.node(), service ? limits.perUser() : limits.node());
    }

    /** The tenant of {@code app}, made now if it has none. */
    public ServedTenant of(String app) {
        synchronized (byApp) {
            if (closed) {
                throw new IllegalStateException("the engine is closing");
            }
            if (stopped.contains(app)) {
                throw new org.rdmashuffle.core.control.RequestRefusedException("application " + app + " has stopped");
            }
            ServedTenant t = byApp.get(app);
            if (t != null) {
                return t;
            }
            // Counted from its making until its device resources are freed (a stopped one's buffers may still
            // complete into the completion queue): for its user (half the node's) and for the node (as many as
            // fit a completion queue: ServiceLimits.onDevice).
            String full = usage.tryAdd(ServiceUsage.Kind.TENANTS, app);
            if (full != null) {
                int perTenant = buffersPerTenant(config, windowUse);
                warnings.warn("rdma-shuffle: refusing " + app + ": " + full + " (each application's " + perTenant
                        + " receive and send buffers take their room in the " + cqEntries + "-entry completion queue: "
                        + EngineConfig.KEY_RECEIVE_BUFFERS + ", " + EngineConfig.KEY_SEND_BUFFERS + ")");
                throw new org.rdmashuffle.core.control.RequestRefusedException(full);
            }
            String user = usage.chargedTo(ServiceUsage.Kind.TENANTS, app);
            long pools = service ? poolBytes(config) : 0;
            try {
                if (pools > 0) {
                    reservePools(app, user, pools);
                }
                try {
                    t = new ServedTenant(context, registration, windowUse, ids.getAndIncrement(), app, user, config, limits,
                            registeredMemory, lookups.apply(app), usage);
                } catch (RuntimeException | Error e) {
                    if (pools > 0) {
                        registeredMemory.releasePools(user, pools);
                    }
                    throw e;
                }
            } catch (RuntimeException | Error e) {
                usage.remove(ServiceUsage.Kind.TENANTS, app);
                throw e;
            }
            // Given back when its PD is gone, to the user it was charged to; never if its resources are left.
            t.domain().whenFreed(() -> {
                if (pools > 0) {
                    registeredMemory.releasePools(user, pools);
                }
                usage.remove(ServiceUsage.Kind.TENANTS, app);
            });
            t.registry().resolver(resolver);
            byIndex.put(t.index(), t);
            byApp.put(app, t);
            return t;
        }
    }

    /** A refusal an application can repeat: logged once a minute with the count of the rest. */
    private final org.rdmashuffle.verbs.util.RepeatedWarning warnings = new org.rdmashuffle.verbs.util.RepeatedWarning(
            System.getLogger(Tenants.class.getName()), 60, java.util.concurrent.TimeUnit.SECONDS);

    /** Completion-queue entries one tenant's buffers may take: its receives and sends, and with windows its binds. */
    static int buffersPerTenant(EngineConfig config, org.rdmashuffle.core.transport.WindowUse windowUse) {
        return config.receiveBuffers() + config.sendBuffers() + (windowUse.on() ? ServingWindows.BIND_SLOTS : 0);
    }

    /** The registered bytes of a tenant's receive and send pools, in whole pages. */
    static long poolBytes(EngineConfig config) {
        long bytes = (long) (config.receiveBuffers() + config.sendBuffers()) * config.receiveBufferSize();
        long page = 4096;
        return (bytes + page - 1) / page * page;
    }

    /**
     * Counts a new tenant's pools in the registered-memory budget of {@code user} and the node: other
     * applications' idle regions make room if they must (as for a region); refused if none can.
     */
    private void reservePools(String app, String user, long bytes) {
        RegistryBudget.Shortage s;
        while ((s = registeredMemory.tryReservePools(user, bytes)) != RegistryBudget.Shortage.NONE) {
            if (registeredMemory.reclaimIdle(bytes, 0, s, user, null) == 0) {
                throw new org.rdmashuffle.core.control.RequestRefusedException("registered memory is exhausted: the "
                        + (s == RegistryBudget.Shortage.USER ? "user's" : "node's") + " share cannot take the "
                        + bytes + " bytes of this application's send and receive buffers");
            }
        }
    }

    /**
     * The application stopped: it gets no tenant from now on; its tenant, if it has one, is taken out of
     * the tables (as {@link #remove}) and returned for the caller to retire and close.
     */
    public ServedTenant stop(String app) {
        synchronized (byApp) {
            stopped.add(app);
            if (stopped.size() > STOPPED_REMEMBERED) {
                stopped.remove(stopped.iterator().next());
            }
        }
        return remove(app);
    }

    /** The tenant of {@code app} if it has one now (none is made). */
    public ServedTenant find(String app) {
        synchronized (byApp) {
            return byApp.get(app);
        }
    }

    /** Whether {@code app} stopped (as far as the last {@value #STOPPED_REMEMBERED} stops go). */
    public boolean hasStopped(String app) {
        synchronized (byApp) {
            return stopped.contains(app);
        }
    }

    /** What registries hold across tenants. */
    public RegistryBudget registeredMemory() {
        return registeredMemory;
    }

    /** The tenant whose receive wr_ids carry {@code index}; null once it is gone. */
    public ServedTenant byIndex(int index) {
        return byIndex.get(index);
    }

    /**
     * Takes {@code app}'s tenant out of the tables (its completions are ignored from now on); the caller
     * retires its connections and closes it. Null if it has none.
     */
    public ServedTenant remove(String app) {
        ServedTenant t;
        synchronized (byApp) {
            t = byApp.remove(app);
        }
        if (t != null) {
            byIndex.remove(t.index());
            retire(t);
        }
        return t;
    }

    /** Keeps a removed tenant's figures in the node's totals, so they never go down (what it counts later is lost). */
    private void retire(ServedTenant t) {
        synchronized (retired) {
            retiredServed = retiredServed.plus(t.requests().served());
            retiredRegistrations = retiredRegistrations.plus(t.registry().registrationCounts());
        }
    }

    /** What every application, present and past, was served: the node's totals. */
    public ServedCounts.Snapshot served() {
        ServedCounts.Snapshot past;
        synchronized (retired) {
            past = retiredServed;
        }
        return total(past, t -> t.requests().served(), ServedCounts.Snapshot::plus);
    }

    /** Map-output registrations of every application, present and past. */
    public RegistrationCounts.Snapshot registrations() {
        RegistrationCounts.Snapshot past;
        synchronized (retired) {
            past = retiredRegistrations;
        }
        return total(past, t -> t.registry().registrationCounts(), RegistrationCounts.Snapshot::plus);
    }

    /** {@code past} plus every present tenant's figure. */
    private <T> T total(T past, java.util.function.Function<ServedTenant, T> of, java.util.function.BinaryOperator<T> plus) {
        T total = past;
        for (ServedTenant t : all()) {
            total = plus.apply(total, of.apply(t));
        }
        return total;
    }

    /** What each present application was served, by application id. */
    public java.util.Map<String, ServedCounts.Snapshot> servedByApplication() {
        java.util.Map<String, ServedCounts.Snapshot> m = new java.util.TreeMap<>();
        for (ServedTenant t : all()) {
            m.put(t.app(), t.requests().served());
        }
        return m;
    }

    /** Takes every tenant out (the engine is closing): no new one is made after this. */
    public List<ServedTenant> removeAll() {
        synchronized (byApp) {
            closed = true;
            List<ServedTenant> all = new ArrayList<>(byApp.values());
            byApp.clear();
            byIndex.clear();
            return all;
        }
    }

    /** Sets who finds outputs nobody registered, for every tenant now and later. */
    public void resolver(MapOutputRegistry.Resolver r) {
        synchronized (byApp) {
            resolver = r;
            byApp.values().forEach(t -> t.registry().resolver(r));
        }
    }

    public List<ServedTenant> all() {
        return new ArrayList<>(byIndex.values());
    }

    /** The device resources of the tenant whose receive wr_ids carry {@code index}; null once it is gone (the router's lookup). */
    @Override
    public TenantDomain domainByIndex(int index) {
        ServedTenant t = byIndex.get(index);
        return t == null ? null : t.domain();
    }

    @Override
    public List<TenantDomain> domains() {
        List<TenantDomain> all = new ArrayList<>();
        for (ServedTenant t : byIndex.values()) {
            all.add(t.domain());
        }
        return all;
    }

    public int size() {
        return byIndex.size();
    }
}
