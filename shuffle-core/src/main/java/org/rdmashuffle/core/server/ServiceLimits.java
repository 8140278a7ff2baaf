package org.rdmashuffle.core.server;

import java.time.Duration;

import org.rdmashuffle.core.config.EngineConfig;

/**
 * The resource model of a serving engine in one place: every bound it puts on what an application,
 * a user's applications together, and the whole node may make it hold, in number, in bytes and in
 * time. docs/security.md's table is this record, row by row, with the setting behind each bound and
 * what a tenant sees at it. Derived from the engine's settings once; the parts that enforce a bound
 * take it from here.
 *
 * @param perApplication      registered bytes and regions, index heap of one application
 * @param perUser             the same for all of one user's applications together
 * @param node                the same for the whole node
 * @param connectionsPerApplication data connections of one application (its control connections have the same bound)
 * @param connectionsPerUser  the same for one user's applications together
 * @param connections         the same for the whole node
 * @param serverThreadsPerUser server threads one user's requests may hold at once
 * @param connectorsPerUser   connector threads (queue-pair set-ups) one user may hold at once
 * @param lookupThreadsPerUser lookup threads (searches on disk) one user may hold at once
 * @param requests           fetch requests being answered off the poller (waiting for a server thread, a
 *                            search or a registration, each with a timer task for its timeout), per
 *                            application, per user and for the node
 * @param requestBytes        the heap those requests hold (a constant each, and each block's id)
 * @param tenants             applications with device resources (PD, SRQ, pinned pools) at once: one per
 *                            application; per user half, and for the node, of as many as fit a completion queue
 * @param windows             memory windows (the device's {@code max_mw} is shared by every application):
 *                            per application {@code maxMemoryWindowsPerApplication}, per user twice that, for
 *                            the node eight times, within the device's {@code max_mw}
 * @param sendDeadline        the longest an answer may wait for the reducer to acknowledge it
 * @param lookupTimeout       the longest a request waits for a search on disk or a registration
 * @param lease               how long a described region stays registered for the reads that follow
 * @param handshakeTimeout    the longest a control connection may take to authenticate (and a queue-pair set-up to dial)
 * @param controlIdleTimeout  the longest an authenticated control connection holding nothing stays without a request answered
 */
public record ServiceLimits(RegistryLimits perApplication, RegistryLimits perUser, RegistryLimits node,
                            int connectionsPerApplication, int connectionsPerUser, int connections,
                            int serverThreadsPerUser, int connectorsPerUser, int lookupThreadsPerUser,
                            ServiceUsage.Bound requests, ServiceUsage.Bound requestBytes, ServiceUsage.Bound tenants,
                            ServiceUsage.Bound windows,
                            Duration sendDeadline, Duration lookupTimeout, Duration lease, Duration handshakeTimeout,
                            Duration controlIdleTimeout) {
    /** Fetch requests of one application waiting for a server thread; more are answered "busy". */
    public static final int SERVER_QUEUE_PER_APPLICATION = 4096;
    /** Threads running control requests (a CONNECT sets up queue pairs, dialling the peer on the software provider). */
    public static final int CONNECTOR_THREADS = 4;
    /** CONNECTs of one application waiting for a connector thread; more are answered "busy". */
    public static final int CONNECT_QUEUE_PER_APPLICATION = 64;
    /** Threads searching the node's disks for map outputs nobody registered. */
    public static final int LOOKUP_THREADS = 4;
    /** Searches of one application waiting for a lookup thread; more are answered "busy". */
    public static final int LOOKUP_QUEUE_PER_APPLICATION = 1024;
    /** Fetch requests of one application being answered off the poller; a user's twice that, the node's eight times. */
    public static final int REQUESTS_PER_APPLICATION = 4096;
    /** Heap those requests of one application may hold; a user's twice that, the node's eight times. */
    public static final long REQUEST_BYTES_PER_APPLICATION = 4L << 20;

    public static ServiceLimits of(EngineConfig c) {
        RegistryLimits node = new RegistryLimits(c.registeredMemoryLimit(), c.maxRegisteredRegions(), c.maxIndexMemory());
        RegistryLimits perUser = new RegistryLimits(c.registeredMemoryLimitPerUser(), Math.max(1, c.maxRegisteredRegions() / 2),
                Math.max(1, c.maxIndexMemory() / 2));
        RegistryLimits perApplication = new RegistryLimits(c.registeredMemoryLimitPerApplication(),
                Math.max(1, c.maxRegisteredRegions() / 4), Math.max(1, c.maxIndexMemory() / 4));
        return new ServiceLimits(perApplication, perUser, node, c.maxServedConnectionsPerApplication(),
                c.maxServedConnectionsPerUser(), c.maxServedConnections(),
                // One server thread is always left to other users (with the default two, each user runs one at a time).
                Math.max(1, c.serverThreads() - 1), 2, 1,
                new ServiceUsage.Bound(REQUESTS_PER_APPLICATION, 2 * REQUESTS_PER_APPLICATION, 8 * REQUESTS_PER_APPLICATION),
                new ServiceUsage.Bound(REQUEST_BYTES_PER_APPLICATION, 2 * REQUEST_BYTES_PER_APPLICATION,
                        8 * REQUEST_BYTES_PER_APPLICATION),
                // Tenants and windows: their node bounds are the device's (onDevice); until then, none but per application.
                new ServiceUsage.Bound(1, Long.MAX_VALUE, Long.MAX_VALUE),
                windows(c.maxMemoryWindowsPerApplication(), Long.MAX_VALUE),
                c.connectTimeout(), c.lookupTimeout(), c.fetchTimeout(), c.connectTimeout(), c.fetchTimeout().multipliedBy(2));
    }

    /** Windows: {@code perApplication}, a user twice that, the node eight times; each within the node's {@code deviceMax}. */
    private static ServiceUsage.Bound windows(long perApplication, long deviceMax) {
        long node = Math.max(1, Math.min(8 * perApplication, deviceMax));
        long perUser = Math.min(2 * perApplication, node);
        return new ServiceUsage.Bound(Math.min(perApplication, perUser), perUser, node);
    }

    /**
     * These limits on a device: {@code tenantsThatFit} tenants whose buffers fit its completion queue
     * (a user's applications at most half of them, at least one), and windows within its {@code
     * max_mw} ({@code maxWindows}).
     */
    public ServiceLimits onDevice(int tenantsThatFit, int maxWindows) {
        long node = Math.max(1, tenantsThatFit);
        ServiceUsage.Bound t = new ServiceUsage.Bound(1, Math.max(1, node / 2), node);
        return new ServiceLimits(perApplication, perUser, this.node, connectionsPerApplication, connectionsPerUser, connections,
                serverThreadsPerUser, connectorsPerUser, lookupThreadsPerUser, requests, requestBytes, t,
                windows(windows.perApplication(), Math.max(1, maxWindows)), sendDeadline, lookupTimeout, lease, handshakeTimeout,
                controlIdleTimeout);
    }
}
