package org.rdmashuffle.core.server;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.control.ControlServer;
import org.rdmashuffle.core.control.ControlSession;
import org.rdmashuffle.core.protocol.ConnectCodec;
import org.rdmashuffle.core.transport.ConnectionTable;
import org.rdmashuffle.core.transport.DataConnection;
import org.rdmashuffle.core.transport.TenantDomain;
import org.rdmashuffle.core.transport.TransportContext;

/**
 * The serving side of an engine: the outputs it serves, by application ({@link Tenants}: an
 * executor's engine has one, its own; a node's service one per application it serves), the control
 * server where reducers authenticate and ask for queue pairs ({@link ServingConnections}, on the
 * connector threads), the answering of their fetch requests ({@link FetchRequestServer}: on the
 * poller when ready, else on the server threads), disk searches for outputs nobody registered (a
 * service's lookup threads), and the stopping of applications ({@link ApplicationStops}). Every bound
 * it puts on its tenants is in {@link ServiceLimits} (docs/security.md's table). Whose outputs it
 * serves, an executor's own or a node's applications', is its {@link Tenancy}: the only difference.
 *
 * <p>Threads it owns: {@code rdma-shuffle-server-*}, {@code rdma-shuffle-connector-*}, a service's
 * {@code rdma-shuffle-lookup-*} and the stopper, and the control server's event loop. It is closed in
 * phases by the engine, between the transport's ({@link #stopThreads}, {@link #awaitServers},
 * {@link #closeControlServer}, {@link #retireConnections}, {@link #endTenants}).
 */
public final class ServeService {
    private final TransportContext transport;
    private final ServiceUsage usage;
    /** An executor's own outputs, or a node's applications' (with the lookup threads that find them). */
    private final Tenancy tenancy;
    private final Tenants tenants;
    /** Ends stopped applications' tenants, off the caller's thread (YARN's dispatcher must not wait on a peer). */
    private final ApplicationStops stops;
    /**
     * Answer the fetch requests the poller cannot answer at once, a few outputs' slow work per turn,
     * round-robin across applications, bounded per application, all but one of them at most for one user.
     */
    private final FairThreads servers;
    private final FetchRequestServer requestServer;
    private final ServingConnections servingConnections;
    /**
     * Run control-plane requests (a CONNECT creates and connects queue pairs, which on the software
     * provider may dial the peer): off the control plane's event loop, taken fairly across applications,
     * at most two of one user at a time (one whose dials hang leaves threads for the others), bounded,
     * so a slow or hostile peer holds up at most these threads, never other peers' handshakes.
     */
    private final FairThreads connectors;
    private final ControlServer controlServer;

    /**
     * @param limits every bound the service puts on its tenants (derived once from {@code config})
     * @param service a node's service (many applications, bounded per user, reducers dial it) or an
     *        executor's engine (its own outputs)
     * @param secrets each application's secret (null for one not served); null turns authentication off
     * @param userOf an application's user: whose share of the node it draws on
     */
    public ServeService(EngineConfig config, ServiceLimits limits, TransportContext transport, boolean service,
                        Function<String, byte[]> secrets, Function<String, String> userOf) {
        this.transport = transport;
        // The node's bounds on tenants and windows are the device's: its completion queue and its max_mw.
        limits = limits.onDevice(transport.profile().cqEntries() / Tenants.buffersPerTenant(config, transport.profile().windows()),
                transport.profile().windows().on() ? transport.context().queryDevice().maxMw() : Integer.MAX_VALUE);
        this.usage = new ServiceUsage(limits, userOf);
        List<Runnable> made = new ArrayList<>();
        try {
            this.tenancy = Tenancy.of(service, config, limits, transport, userOf, usage);
            made.add(tenancy::closeOnFailedStart);
            this.tenants = tenancy.tenants;
            this.servers = new FairThreads("rdma-shuffle-server", config.serverThreads(),
                    ServiceLimits.SERVER_QUEUE_PER_APPLICATION, Integer.MAX_VALUE, limits.serverThreadsPerUser());
            made.add(servers::close);
            long leaseNanos = limits.lease().toNanos();
            // An answer through windows may make one: the timer looks at it by its lease's end (lock-free when due by then).
            this.requestServer = new FetchRequestServer(servers, transport.sender(), usage,
                    () -> transport.tickBy(TransportContext.after(System.nanoTime(), leaseNanos + 1)), transport.timer());
            ConnectionTable table = transport.connections();
            long graceMillis = config.connectTimeout().toMillis();
            this.servingConnections = new ServingConnections(config, tenancy::tenant,
                    (t, version) -> new ServingHandler(t, requestServer, table, transport.sender(), transport.timer(), graceMillis,
                            usage, version),
                    transport.queuePairs(), transport.profile().servingOptions(), transport.profile().sgeListBroken(), table, usage);
            this.connectors = new FairThreads("rdma-shuffle-connector", ServiceLimits.CONNECTOR_THREADS,
                    ServiceLimits.CONNECT_QUEUE_PER_APPLICATION, limits.connectorsPerUser(), limits.connectorsPerUser());
            made.add(connectors::close);
            this.stops = new ApplicationStops(this::endTenant, transport.waitForSetUpsMillis());
            if (transport.profile().windows().on()) { // an idle reducer's windows go at its lease's end
                transport.everyTick(now -> {
                    long next = TransportContext.IDLE;
                    for (ServedTenant t : tenants.all()) {
                        long in = t.windows().sweep();
                        next = Math.min(next, in == Long.MAX_VALUE ? TransportContext.IDLE : TransportContext.after(now, in));
                    }
                    return next;
                });
            }
            this.controlServer = new ControlServer(new InetSocketAddress(config.bindAddress(), config.controlPort()),
                    secrets, this::onControlRequest, ControlServer.MAX_FRAME_BYTES,
                    (app, task) -> connectors.submit(app, userOf.apply(app), task),
                    limits.handshakeTimeout(), limits.controlIdleTimeout(), new ControlAdmission(tenants::hasStopped, usage));
        } catch (RuntimeException | Error e) {
            for (int i = made.size() - 1; i >= 0; i--) {
                try {
                    made.get(i).run();
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
    }

    /** The live tenants' device resources, for the transport's routing of receives. */
    public TransportContext.TenantIndex tenantIndex() {
        return tenants;
    }

    /** Where peers reach the control server: what the adapter publishes. */
    public InetSocketAddress address() {
        return controlServer.address();
    }

    /** An executor's engine's own tenant (what its fetch buffers are registered on); refused by a node's service. */
    public ServedTenant own() {
        return tenancy.own();
    }

    /** See {@code RdmaShuffleEngine.registerMapOutput(int, long, Path, long[])}. */
    public void registerMapOutput(int shuffleId, long mapId, Path dataFile, long[] offsets) {
        tenancy.own().registry().register(shuffleId, mapId, dataFile, offsets);
    }

    /** A node's service: an output of application {@code app}, in a file this process trusts. */
    public void registerMapOutput(String app, int shuffleId, long mapId, Path dataFile, long[] offsets) {
        tenancy.requireNode();
        tenancy.tenant(app).registry().register(app, shuffleId, mapId, dataFile, offsets);
    }

    public void unregisterShuffle(int shuffleId) {
        tenancy.own().registry().unregisterShuffle(shuffleId);
    }

    /** See {@code RdmaShuffleEngine.unregisterApplication}: refused from now on, freed on the stopper thread. */
    public int unregisterApplication(String app) {
        tenancy.requireNode();
        ServedTenant t = tenants.stop(app);
        controlServer.closeConnections(app);
        if (t == null) {
            return 0;
        }
        int outputs = t.registry().mapOutputs();
        stops.stop(t.domain());
        return outputs;
    }

    public int stopsUnderWay() {
        return stops.underWay();
    }

    /** Who finds outputs nobody registered (see {@code RdmaShuffleEngine.resolver}). */
    public void resolver(MapOutputRegistry.Resolver resolver) {
        tenancy.resolver(resolver);
    }

    public int tenants() {
        return tenants.size();
    }

    /** Tests: the tenant of an application now, or null. */
    public ServedTenant find(String app) {
        return tenants.find(app);
    }

    /** Tests: {@code hook} runs in each queue-pair set-up of a CONNECT, before its connection joins its tenant. */
    public void duringSetUps(Runnable hook) {
        servingConnections.duringSetUps(hook);
    }

    /** Tests: {@code hook} runs after each set-up let go of its tenant, before its connection is tied to its session. */
    public void afterSetUps(Runnable hook) {
        servingConnections.afterSetUps(hook);
    }

    /** Tests: what is counted by number now (connections, waiting requests, tenants, windows), by application and user. */
    public ServiceUsage usage() {
        return usage;
    }

    /** Map-output bytes registered now, across tenants. */
    public long registeredBytes() {
        long n = 0;
        for (ServedTenant t : tenants.all()) {
            n += t.registry().registeredBytes();
        }
        return n;
    }

    /** Map outputs known now (recorded or found on disk, registered with the device or not), across tenants. */
    public int mapOutputs() {
        int n = 0;
        for (ServedTenant t : tenants.all()) {
            n += t.registry().mapOutputs();
        }
        return n;
    }

    /** The figures operators watch: served, refused and registered, node totals and by application. */
    public Tenants tenantFigures() {
        return tenants;
    }

    /** Receives posted now, across tenants. */
    public int postedReceives() {
        int n = 0;
        for (TenantDomain t : tenants.domains()) {
            synchronized (t.receivePool()) {
                n += t.isClosed() ? 0 : t.receivePool().posted();
            }
        }
        return n;
    }

    /**
     * The control-plane request of a peer that wants to fetch from us: queue pairs for it, connected
     * to its own. Runs on a connector thread, under the transport's set-up lock.
     */
    private byte[] onControlRequest(ControlSession session, byte type, byte[] payload) {
        if (type != ConnectCodec.CONNECT && type != ConnectCodec.DISCONNECT) {
            // Every version this server speaks has these two: nobody honest sends another (closed, logged once a minute).
            throw new org.rdmashuffle.core.control.ProtocolViolationException("unknown control request type " + type);
        }
        transport.setUpLock().lock();
        try {
            if (transport.isClosed()) {
                throw new IllegalStateException("the engine is closing");
            }
            return type == ConnectCodec.CONNECT ? servingConnections.connect(session, payload)
                    : servingConnections.disconnect(session, payload);
        } finally {
            transport.setUpLock().unlock();
        }
    }

    /**
     * Ends a stopped application's tenant, on the stopper thread: closed to new queue-pair set-ups
     * first (those under way waited for at most {@code waitMillis}), so that a CONNECT racing the stop
     * cannot add a queue pair after its connections were retired; then its connections (QPs), then its
     * SRQ, regions and PD, each attempted whatever the others did ({@link TenantDomain#closeAsync}).
     */
    private CompletableFuture<Void> endTenant(TenantDomain t, long waitMillis) {
        return t.closeAsync(waitMillis, transport.connections()::retire);
    }

    // ------------------------------------------------------------------ close, in phases

    /** No new work: the server, connector and lookup threads stop taking tasks. */
    public void stopThreads() {
        servers.close();
        connectors.close();
        tenancy.stopThreads();
    }

    /**
     * A server thread may be in a disk search (it then finds the registry closed) or in a
     * registration, which cannot be interrupted: waits a second at most for it.
     */
    public void awaitServers() {
        try {
            servers.awaitTermination(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    public void closeControlServer() {
        controlServer.close();
    }

    /** Retires every serving connection (the transport is quiet: no set-up runs). */
    public void retireConnections() {
        for (DataConnection c : transport.connections().serving()) {
            transport.connections().retire(c);
        }
    }

    /**
     * Ends every tenant (stopped ones not ended yet, and the live ones): their QPs, then SRQ, regions,
     * PD. Completes when all are freed; a registration under way holds its tenant's PD till it ends.
     */
    public CompletableFuture<Void> endTenants(long waitMillis) {
        List<CompletableFuture<Void>> ended = new ArrayList<>();
        ended.add(stops.close());
        for (ServedTenant t : tenants.removeAll()) {
            ended.add(endTenant(t.domain(), waitMillis));
        }
        return CompletableFuture.allOf(ended.toArray(CompletableFuture[]::new));
    }
}
