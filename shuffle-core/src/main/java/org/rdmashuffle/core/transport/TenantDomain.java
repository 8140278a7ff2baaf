package org.rdmashuffle.core.transport;

import java.util.ArrayDeque;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.server.FetchRequestHandler;
import org.rdmashuffle.core.server.MapOutputRegistry;
import org.rdmashuffle.core.server.RegisteredMemoryBudget;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.SharedReceiveQueue;
import org.rdmashuffle.verbs.VerbsContext;

/**
 * The device resources of one application ("tenant"): its own protection domain holding its queue
 * pairs, its shared receive queue and receive buffers, its send buffers and the regions of its map
 * outputs. A queue pair of one application therefore cannot name another's memory: the NIC checks
 * that an rkey belongs to the queue pair's PD before it reads, so even a guessed or stolen rkey gets a
 * remote access error. An executor's engine has one tenant (its own application); a node's shuffle
 * service one per application it serves, made at the application's first output or connection and
 * closed when the application ends.
 *
 * <p>Shared by all tenants: the device context, the pollers and their completion queues (a CQ belongs
 * to the context, not to a PD), threads and the control plane. A tenant adds memory only.
 *
 * <p>Close order (rdma-core's pyverbs PD.close): the engine retires the tenant's connections (their
 * QPs) first; then the SRQ, the regions (outputs, receive and send buffers), and last the PD.
 */
public final class TenantDomain implements AutoCloseable {
    /** Receive wr_ids carry the tenant's index above the slot, so a completion finds its pool. */
    private static final int SLOT_BITS = 32;

    private final int index;
    private final String app;
    private final ProtectionDomain pd;
    private final SharedReceiveQueue srq;
    private final ReceivePool receivePool;
    private final SendBufferPool sendPool;
    private final MapOutputRegistry registry;
    private final FetchRequestHandler requests;
    private final int srqLimit;
    private final Set<DataConnection> connections = ConcurrentHashMap.newKeySet();
    /** Sends waiting for one of this tenant's send slots; guarded by itself. */
    final ArrayDeque<MetadataSender.QueuedSend> queuedSends = new ArrayDeque<>();
    private volatile boolean closed;

    /**
     * @param index never reused while the engine runs (late completions of a closed tenant are ignored)
     * @param registeredMemory the engine's budget of registered map-output bytes, shared by its tenants
     */
    public TenantDomain(VerbsContext context, int index, String app, EngineConfig config, long leaseMillis,
                        RegisteredMemoryBudget registeredMemory) {
        this.index = index;
        this.app = app;
        this.pd = context.allocateProtectionDomain();
        SharedReceiveQueue q = null;
        ReceivePool receives = null;
        SendBufferPool sends = null;
        try {
            q = pd.createSharedReceiveQueue(config.receiveBuffers(), 1, 0);
            receives = new ReceivePool(pd, q, config.receiveBuffers(), config.receiveBufferSize(), config.receiveLowWater(),
                    Math.max(1, config.receiveBuffers() / 8), (long) index << SLOT_BITS);
            // The device tells us (SRQ_LIMIT_REACHED) when fewer than this many receives remain posted.
            this.srqLimit = Math.max(1, config.receiveLowWater());
            q.armLimit(srqLimit);
            sends = new SendBufferPool(pd, config.sendBuffers(), config.receiveBufferSize());
        } catch (RuntimeException | Error e) {
            closeQuietly(sends, e);
            closeQuietly(receives, e);
            closeQuietly(q, e);
            closeQuietly(pd, e);
            throw e;
        }
        this.srq = q;
        this.receivePool = receives;
        this.sendPool = sends;
        // One application of many may pin only its share of the node's budget; an engine's own, all of it.
        long limit = app.equals(MapOutputRegistry.OWN) ? config.registeredMemoryLimit()
                : config.registeredMemoryLimitPerApplication();
        this.registry = new MapOutputRegistry(pd, limit, leaseMillis, registeredMemory);
        this.requests = new FetchRequestHandler(registry);
    }

    private static void closeQuietly(AutoCloseable c, Throwable into) {
        if (c != null) {
            try {
                c.close();
            } catch (Exception e) {
                into.addSuppressed(e);
            }
        }
    }

    /** The tenant a receive completion's wr_id value belongs to. */
    public static int tenantOf(long receiveValue) {
        return (int) (receiveValue >>> SLOT_BITS);
    }

    public int index() {
        return index;
    }

    /** The application ({@link MapOutputRegistry#OWN} in an executor's engine). */
    public String app() {
        return app;
    }

    public ProtectionDomain pd() {
        return pd;
    }

    public SharedReceiveQueue srq() {
        return srq;
    }

    /** Its receive buffers: lock on the pool itself to use it (pollers and the async-event thread share it). */
    public ReceivePool receivePool() {
        return receivePool;
    }

    public SendBufferPool sendPool() {
        return sendPool;
    }

    public MapOutputRegistry registry() {
        return registry;
    }

    public FetchRequestHandler requests() {
        return requests;
    }

    /** Re-arms the SRQ limit event after its receives were flushed. */
    public void rearm() {
        if (!closed) {
            srq.armLimit(srqLimit);
        }
    }

    /** Connections on this tenant's PD; the engine retires them before {@link #close()}. */
    public Set<DataConnection> connections() {
        return connections;
    }

    public boolean isClosed() {
        return closed;
    }

    /**
     * Frees everything in the order verbs requires; the engine has retired every connection (QP) of
     * the tenant first. Waits for registrations under way (the registry's close).
     */
    @Override
    public void close() {
        synchronized (receivePool) {
            if (closed) {
                return;
            }
            closed = true;
        }
        srq.close();
        registry.close();
        synchronized (receivePool) {
            receivePool.close();
        }
        sendPool.close();
        pd.close();
    }

    @Override
    public String toString() {
        return "tenant " + index + (app.isEmpty() ? " (own outputs)" : " (" + app + ")");
    }
}
