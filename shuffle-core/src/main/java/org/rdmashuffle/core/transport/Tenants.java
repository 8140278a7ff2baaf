package org.rdmashuffle.core.transport;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.server.MapOutputRegistry;
import org.rdmashuffle.core.server.RegisteredMemoryBudget;
import org.rdmashuffle.verbs.VerbsContext;

/**
 * The engine's {@link TenantDomain}s: by application, and by the index receive wr_ids carry (so a
 * completion finds its pool even after its connection went). An executor's engine has one tenant,
 * its own, made at start; a service makes one per application when first needed, admitted only while
 * every tenant's receive and send buffers still fit a completion queue (all of them may complete
 * into one). Indices are never reused. Thread-safe.
 */
public final class Tenants {
    private final VerbsContext context;
    private final EngineConfig config;
    private final int cqEntries;
    /** Map-output bytes registered across tenants: registeredMemoryLimit bounds the node, not each application. */
    private final RegisteredMemoryBudget registeredMemory;
    /** Guarded by itself. */
    private final Map<String, TenantDomain> byApp = new HashMap<>();
    private final Map<Integer, TenantDomain> byIndex = new ConcurrentHashMap<>();
    private final AtomicInteger ids = new AtomicInteger();
    private volatile MapOutputRegistry.Resolver resolver;
    private boolean closed;

    public Tenants(VerbsContext context, EngineConfig config, int cqEntries) {
        this.context = context;
        this.config = config;
        this.cqEntries = cqEntries;
        this.registeredMemory = new RegisteredMemoryBudget(config.registeredMemoryLimit());
    }

    /** The tenant of {@code app}, made now if it has none. */
    public TenantDomain of(String app) {
        synchronized (byApp) {
            if (closed) {
                throw new IllegalStateException("the engine is closing");
            }
            TenantDomain t = byApp.get(app);
            if (t != null) {
                return t;
            }
            int perTenant = config.receiveBuffers() + config.sendBuffers();
            if ((long) (byApp.size() + 1) * perTenant > cqEntries) {
                throw new IllegalStateException("already serving " + byApp.size() + " applications: their " + perTenant
                        + " receive and send buffers each fill the " + cqEntries + "-entry completion queue ("
                        + EngineConfig.KEY_RECEIVE_BUFFERS + ", " + EngineConfig.KEY_SEND_BUFFERS + ")");
            }
            t = new TenantDomain(context, ids.getAndIncrement(), app, config, config.fetchTimeout().toMillis(), registeredMemory);
            t.registry().resolver(resolver);
            byIndex.put(t.index(), t);
            byApp.put(app, t);
            return t;
        }
    }

    /** The tenant whose receive wr_ids carry {@code index}; null once it is gone. */
    public TenantDomain byIndex(int index) {
        return byIndex.get(index);
    }

    /**
     * Takes {@code app}'s tenant out of the tables (its completions are ignored from now on); the caller
     * retires its connections and closes it. Null if it has none.
     */
    public TenantDomain remove(String app) {
        TenantDomain t;
        synchronized (byApp) {
            t = byApp.remove(app);
        }
        if (t != null) {
            byIndex.remove(t.index());
        }
        return t;
    }

    /** Takes every tenant out (the engine is closing): no new one is made after this. */
    public List<TenantDomain> removeAll() {
        synchronized (byApp) {
            closed = true;
            List<TenantDomain> all = new ArrayList<>(byApp.values());
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

    public List<TenantDomain> all() {
        return new ArrayList<>(byIndex.values());
    }

    public int size() {
        return byIndex.size();
    }
}
