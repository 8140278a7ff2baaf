package org.rdmashuffle.core.control;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A control plane of another release in front of a real engine's, for the cross-release tests
 * (docs/compatibility.md): a reducer connects to the relay; for each connection it accepts, the relay
 * opens one of its own to the engine, passes every request over it and hands back the answer; when
 * the reducer's connection ends, so does the relay's, and with it the data connections the engine set
 * up on it. The queue pairs themselves join reducer and engine directly. Which side of the relay
 * speaks which release is the test's choice: see the factories.
 */
public final class ReleaseRelay implements AutoCloseable {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    /** One upstream connection: its calls, and how it closes. */
    private record Upstream(Call call, AutoCloseable connection) {
    }

    @FunctionalInterface
    private interface Call {
        byte[] call(byte type, byte[] payload) throws IOException;
    }

    @FunctionalInterface
    private interface Dial {
        Upstream open() throws IOException;
    }

    private final AutoCloseable front;
    private final InetSocketAddress address;
    private final ExecutorService requests;

    private ReleaseRelay(AutoCloseable front, InetSocketAddress address, ExecutorService requests) {
        this.front = front;
        this.address = address;
        this.requests = requests;
    }

    /**
     * The previous release's server ({@link PreviousRelease.Server}) in front, this release's client
     * behind: a reducer of this release meets a service of the previous one.
     */
    public static ReleaseRelay previousReleaseServer(InetSocketAddress engine, String app, byte[] secret) throws IOException {
        PreviousRelease.Server front = new PreviousRelease.Server(new InetSocketAddress(engine.getAddress(), 0),
                secret == null ? null : Map.of(app, secret)::get, forwarding(() -> thisReleasesClient(engine, app, secret)));
        return new ReleaseRelay(front, front.address(), null);
    }

    /**
     * This release's server in front, the previous release's client ({@link PreviousRelease.Client})
     * behind: the engine, a service of this release, serves a reducer of the previous one.
     */
    public static ReleaseRelay previousReleaseClient(InetSocketAddress engine, String app, byte[] secret) {
        return thisReleasesServer(engine, app, secret, ProtocolVersions.SPOKEN, () -> {
            PreviousRelease.Client c = PreviousRelease.Client.connect(engine, secret, app, TIMEOUT);
            return new Upstream(c::call, c);
        });
    }

    /**
     * A server of a later release in front, speaking only versions {@code lowest} to {@code highest}
     * ({@code highest} above {@value ProtocolVersions#ALONE}), this release's client behind.
     */
    public static ReleaseRelay serverSpeaking(int lowest, int highest, InetSocketAddress engine, String app, byte[] secret) {
        return thisReleasesServer(engine, app, secret, new ProtocolVersions(lowest, highest),
                () -> thisReleasesClient(engine, app, secret));
    }

    private static Upstream thisReleasesClient(InetSocketAddress engine, String app, byte[] secret) throws IOException {
        ControlClient c = ControlClient.connect(engine, secret, app, ControlServer.MAX_FRAME_BYTES, TIMEOUT);
        return new Upstream((type, payload) -> c.call(type, payload, TIMEOUT), c);
    }

    private static ReleaseRelay thisReleasesServer(InetSocketAddress engine, String app, byte[] secret, ProtocolVersions versions,
                                                   Dial dial) {
        ExecutorService requests = Executors.newFixedThreadPool(2, r -> Thread.ofPlatform().daemon().name("relay").unstarted(r));
        try {
            ControlServer front = new ControlServer(new InetSocketAddress(engine.getAddress(), 0),
                    secret == null ? null : Map.of(app, secret)::get, forwarding(dial), ControlServer.MAX_FRAME_BYTES,
                    RequestScheduler.of(requests), TIMEOUT, Duration.ofMinutes(10), ControlServer.Admission.ANY, versions);
            return new ReleaseRelay(front, front.address(), requests);
        } catch (RuntimeException e) {
            requests.shutdownNow();
            throw e;
        }
    }

    /**
     * Passes each session's requests over an upstream connection of its own, opened at its first
     * request and closed with it. The engine's refusals reach the reducer in the engine's words.
     */
    private static ControlHandler forwarding(Dial dial) {
        Map<ControlSession, Upstream> upstreams = new java.util.concurrent.ConcurrentHashMap<>();
        return (session, type, payload) -> {
            Upstream up = upstreams.get(session); // a session's requests come one at a time
            if (up == null) {
                Upstream opened = dial.open();
                upstreams.put(session, opened);
                session.onClose(() -> {
                    upstreams.remove(session);
                    try {
                        opened.connection().close();
                    } catch (Exception ignored) {
                        // closing
                    }
                });
                up = opened;
            }
            try {
                return up.call().call(type, payload);
            } catch (IOException e) {
                throw new RequestRefusedException(e.getMessage(), e);
            }
        };
    }

    /** The versions this release speaks, as its messages name them ("versions 3 to 4"). */
    public static String spokenHere() {
        return ProtocolVersions.SPOKEN.describe();
    }

    /** Where reducers reach the relay. */
    public InetSocketAddress address() {
        return address;
    }

    /** The front's server, when it is the previous release's (its counts). */
    public PreviousRelease.Server previousReleaseFront() {
        return (PreviousRelease.Server) front;
    }

    @Override
    public void close() throws Exception {
        try {
            front.close();
        } finally {
            if (requests != null) {
                requests.shutdownNow();
            }
        }
    }
}
