package org.rdmashuffle.core.server;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import java.util.function.Function;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.control.ControlSession;
import org.rdmashuffle.core.control.RequestRefusedException;
import org.rdmashuffle.core.protocol.MalformedMessageException;
import org.rdmashuffle.core.protocol.ConnectCodec;
import org.rdmashuffle.core.transport.ConnectionHandler;
import org.rdmashuffle.core.transport.ConnectionTable;
import org.rdmashuffle.core.transport.DataConnection;
import org.rdmashuffle.core.transport.QueuePairFactory;
import org.rdmashuffle.core.transport.TenantDomain;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairEndpoint;

/**
 * The serving side's answer to a CONNECT: queue pairs for a reducer, on the protection domain of the
 * application its control session authenticated for (never one the request names), connected to the
 * reducer's. The server sizes everything: at most its own {@code qpsPerPeer} queue pairs, and as many
 * connections as {@link ServiceUsage} admits for the application, its user and the node. The
 * connection lives as long as the control session, or until the reducer ends it with a DISCONNECT on
 * that session. A refusal is a {@link RequestRefusedException} whose text the reducer may read.
 */
public final class ServingConnections {
    private final EngineConfig config;
    private final Function<String, ServedTenant> tenantOf;
    /** The owner of a new connection of a tenant: what its completions go to. */
    private final BiFunction<ServedTenant, Integer, ConnectionHandler> owners;
    private final QueuePairFactory queuePairs;
    private final ConnectOptions options;
    private final boolean sgeListBroken;
    private final ConnectionTable table;
    private final ServiceUsage usage;
    /**
     * Each control session's data connections, by their first queue pair's number: what a DISCONNECT
     * may end. An entry goes when its connection is retired by a DISCONNECT or with its session, or
     * (retired otherwise) at the session's next CONNECT.
     */
    private final Map<ControlSession, Map<Integer, Served>> bySession = new ConcurrentHashMap<>();
    /** Tests: run in each set-up once its queue pairs are connected, before its connection joins its tenant. */
    private volatile Runnable duringSetUp = () -> { };
    /** Tests: run once a set-up let go of its tenant, before its connection is tied to its control session. */
    private volatile Runnable afterSetUp = () -> { };

    /**
     * @param tenantOf the tenant of an authenticated application (an executor's engine: its own, always)
     * @param owners the owner of a tenant's new connection, given the control protocol version its session agreed (it
     *     counts the connection out of {@code usage} when retired)
     * @param options serving QPs' options (a finite RNR retry)
     */
    public ServingConnections(EngineConfig config, Function<String, ServedTenant> tenantOf,
                              BiFunction<ServedTenant, Integer, ConnectionHandler> owners, QueuePairFactory queuePairs,
                              ConnectOptions options, boolean sgeListBroken, ConnectionTable table, ServiceUsage usage) {
        this.usage = usage;
        this.owners = owners;
        this.config = config;
        this.tenantOf = tenantOf;
        this.queuePairs = queuePairs;
        this.options = options;
        this.sgeListBroken = sgeListBroken;
        this.table = table;
    }

    /**
     * A software-provider endpoint (it carries an admission token) makes the serving QP dial the
     * address it names: only the address the authenticated control connection comes from is dialled,
     * so a reducer cannot make the service connect to a host that is not its own.
     */
    private static void requireDialable(List<QueuePairEndpoint> endpoints, ControlSession session) {
        java.net.InetAddress from = session.remoteAddress() instanceof java.net.InetSocketAddress a ? a.getAddress() : null;
        for (QueuePairEndpoint e : endpoints) {
            if (e.admissionToken() == null) {
                continue; // a device's: the NIC, not this process, reaches it
            }
            java.net.InetAddress target = e.gid().ipv4Address();
            if (target == null || !target.equals(from)) {
                throw new RequestRefusedException("the reducer's data address " + (target == null ? e.gid() : target.getHostAddress())
                        + " is not the address its control connection comes from");
            }
        }
    }

    /** Sets up the connection a CONNECT asks for; returns the encoded answer (our endpoints). */
    public byte[] connect(ControlSession session, byte[] payload) {
        ConnectCodec.Connect theirs;
        try {
            theirs = ConnectCodec.decode(payload);
        } catch (MalformedMessageException e) {
            throw new RequestRefusedException("malformed connect request: " + e.getMessage());
        }
        ServedTenant served = tenantOf.apply(session.appId()); // refused if stopped, or no room for its buffers
        TenantDomain tenant = served.domain();
        if (!tenant.beginSetUp()) {
            throw new RequestRefusedException("application " + session.appId() + " has stopped");
        }
        SetUp made;
        try {
            made = setUp(session, theirs, served);
        } finally {
            tenant.endSetUp();
        }
        afterSetUp.run();
        DataConnection c = made.connection();
        Map<Integer, Served> ofSession = bySession.computeIfAbsent(session, k -> new ConcurrentHashMap<>());
        // Connections of this session retired otherwise (a failed queue pair, a protocol error) leave
        // neither entry nor close hook behind: a session holds as many as it has live connections.
        ofSession.values().removeIf(old -> {
            if (old.connection.isClosed()) {
                session.cancelOnClose(old);
                return true;
            }
            return false;
        });
        Served entry = new Served(session, ofSession, c);
        ofSession.put(c.qpNumber(0), entry);
        session.onClose(entry);
        // The lease tells the reducer how long a described region stays registered for its reads; the
        // flag, that this device's paging needs reads of our regions to start on page boundaries.
        return ConnectCodec.encode(new ConnectCodec.Connect(config.receiveBufferSize(), config.fetchTimeout().toMillis(),
                tenant.registration().pageAlignedReads() ? ConnectCodec.PAGE_ALIGNED_READS : 0, made.endpoints()));
    }

    /** Tests: {@code hook} runs in each set-up, its queue pairs made and connected, before its connection joins its tenant. */
    public void duringSetUps(Runnable hook) {
        duringSetUp = hook == null ? () -> { } : hook;
    }

    /** Tests: {@code hook} runs after each set-up let go of its tenant, before its connection is tied to its session. */
    public void afterSetUps(Runnable hook) {
        afterSetUp = hook == null ? () -> { } : hook;
    }

    private record SetUp(DataConnection connection, List<QueuePairEndpoint> endpoints) {
    }

    /** The queue pairs of a new connection on {@code tenant}, counted against the application's, its user's and the node's bounds. */
    private SetUp setUp(ControlSession session, ConnectCodec.Connect theirs, ServedTenant served) {
        TenantDomain tenant = served.domain();
        String full = usage.tryAdd(ServiceUsage.Kind.DATA, session.appId());
        if (full != null) {
            throw new RequestRefusedException(full);
        }
        boolean counted = true;
        try {
            // As many queue pairs as the reducer offers, up to this server's own qpsPerPeer: the answer says
            // how many, and the reducer keeps that many (a peer never chooses our resource sizes).
            // With memory windows, one: a type 2 window is bound to one queue pair (WindowUse refuses qpsPerPeer > 1).
            int n = served.windows() != null ? 1 : Math.min(theirs.endpoints().size(), config.qpsPerPeer());
            requireDialable(theirs.endpoints().subList(0, n), session);
            QueuePair[] qps = new QueuePair[n];
            List<QueuePairEndpoint> mine = new ArrayList<>(n);
            try {
                for (int i = 0; i < n; i++) {
                    qps[i] = queuePairs.create(tenant, DataConnection.Role.SERVING);
                    QueuePairFactory.connect(qps[i], theirs.endpoints().get(i), options);
                    mine.add(qps[i].localEndpoint(options));
                }
            } catch (org.rdmashuffle.verbs.VerbsException e) {
                QueuePairFactory.closeAll(qps);
                throw new RequestRefusedException("the service cannot connect its queue pairs to the reducer's (errno "
                        + e.errno() + "): " + (e.errno() == org.rdmashuffle.verbs.Errno.ECONNREFUSED
                        ? "cannot reach peer at the reducer's data address" : "see the service's log"), e);
            } catch (RuntimeException e) {
                QueuePairFactory.closeAll(qps);
                throw e;
            }
            // Answers go from our send slots (our receive buffer's size) into the reducer's receive buffers:
            // the smaller of the two sizes every answer, at least ConnectCodec.MIN_RECEIVE_BUFFER_SIZE (a smaller
            // one was refused when the CONNECT was decoded).
            int answerBytes = Math.min(theirs.receiveBufferSize(), config.receiveBufferSize());
            DataConnection c = new DataConnection(session.remoteAddress() + " (" + session.appId() + ")",
                    DataConnection.Role.SERVING, tenant, answerBytes, qps, config.postPath(), 1, 1, sgeListBroken,
                    theirs.endpoints().getFirst().gid());
            c.handle(owners.apply(served, session.protocolVersion()));
            duringSetUp.run();
            counted = false; // counted out by its owner when it is retired (once)
            tenant.connections().add(c);
            table.trackServing(c);
            return new SetUp(c, mine);
        } finally {
            if (counted) {
                usage.remove(ServiceUsage.Kind.DATA, session.appId());
            }
        }
    }

    /**
     * Ends the data connection a DISCONNECT names (by our first queue pair's number), if this control
     * session set it up; the control session stays. Any other number is refused: a session ends only
     * its own connections.
     */
    public byte[] disconnect(ControlSession session, byte[] payload) {
        int first;
        try {
            first = ConnectCodec.decodeDisconnect(payload);
        } catch (MalformedMessageException e) {
            throw new RequestRefusedException("malformed disconnect request: " + e.getMessage());
        }
        Map<Integer, Served> ofSession = bySession.get(session);
        Served served = ofSession == null ? null : ofSession.get(first);
        if (served == null || served.connection.isClosed()) {
            throw new RequestRefusedException("no data connection with queue pair " + first + " was set up on this connection");
        }
        session.cancelOnClose(served);
        served.run();
        return new byte[0];
    }

    /** A connection a control session set up; run, it retires the connection and forgets it. */
    private final class Served implements Runnable {
        final ControlSession session;
        final Map<Integer, Served> ofSession;
        final DataConnection connection;

        Served(ControlSession session, Map<Integer, Served> ofSession, DataConnection connection) {
            this.session = session;
            this.ofSession = ofSession;
            this.connection = connection;
        }

        @Override
        public void run() {
            ofSession.remove(connection.qpNumber(0), this);
            if (ofSession.isEmpty()) {
                bySession.remove(session, ofSession);
            }
            table.retire(connection);
        }
    }
}
