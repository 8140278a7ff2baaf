package org.rdmashuffle.verbs.software;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.security.MessageDigest;
import java.nio.charset.StandardCharsets;
import java.util.List;

import org.rdmashuffle.verbs.Availability;
import org.rdmashuffle.verbs.VerbsDevice;
import org.rdmashuffle.verbs.VerbsProvider;

/**
 * A software RDMA "NIC": the verbs API with RC queue pairs carried on TCP connections, for machines
 * without an RDMA device. One-sided reads, writes and atomics are served by this provider on the
 * remote side, never by application code, and every remote access is checked against the target
 * region's key, bounds and access flags. See docs/providers.md for what it does and does not emulate.
 *
 * <p>Each provider instance is one device ({@code soft0}) with one TCP listener. A QP's data
 * connection is admitted only with the token from that QP's {@link
 * org.rdmashuffle.verbs.QueuePairEndpoint#admissionToken() endpoint}, which peers obtain over the
 * authenticated control plane; {@link Config#admission()} can tighten the check.
 */
public final class SoftwareProvider implements VerbsProvider, AutoCloseable {
    public static final String NAME = "software";
    /** System property: address the default instance listens on (default 127.0.0.1). */
    public static final String BIND_ADDRESS_PROPERTY = "rdmashuffle.verbs.software.bindAddress";
    /** System property: TCP port of the default instance (default 0, any free port). */
    public static final String PORT_PROPERTY = "rdmashuffle.verbs.software.port";
    /**
     * System property: answer reads of files registered with {@code registerOwnedFile} with sendfile
     * (default false: on loopback and veth it measured slower than writing from the mapping).
     */
    public static final String SENDFILE_PROPERTY = "rdmashuffle.verbs.software.sendfile";

    private static volatile SoftwareProvider instance;

    private final SoftDevice device;

    /** Decides whether a presented token admits a connection to a QP; the default compares it with the one issued. */
    @FunctionalInterface
    public interface Admission {
        boolean admit(int qpNumber, String presentedToken, String issuedToken);

        Admission ISSUED_TOKEN = (qpn, presented, issued) -> presented != null && issued != null
                && MessageDigest.isEqual(presented.getBytes(StandardCharsets.US_ASCII), issued.getBytes(StandardCharsets.US_ASCII));
    }

    /**
     * Where the device listens, how it admits data connections, and whether read answers from files it
     * owns go out with sendfile rather than from their mapping.
     */
    public record Config(InetAddress bindAddress, int port, Admission admission, boolean sendfile) {
        public Config(InetAddress bindAddress, int port, Admission admission) {
            this(bindAddress, port, admission, false);
        }

        public static Config loopback() {
            return new Config(InetAddress.getLoopbackAddress(), 0, Admission.ISSUED_TOKEN);
        }

        public Config withSendfile(boolean on) {
            return new Config(bindAddress, port, admission, on);
        }

        static Config fromSystemProperties() {
            String host = System.getProperty(BIND_ADDRESS_PROPERTY, "127.0.0.1");
            try {
                return new Config(InetAddress.getByName(host), Integer.getInteger(PORT_PROPERTY, 0), Admission.ISSUED_TOKEN,
                        Boolean.getBoolean(SENDFILE_PROPERTY));
            } catch (UnknownHostException e) {
                throw new IllegalArgumentException("-D" + BIND_ADDRESS_PROPERTY + "=" + host + " is not an address", e);
            }
        }
    }

    public SoftwareProvider(Config config) {
        this.device = new SoftDevice(config);
    }

    /** The process-wide instance, configured by system properties; lives as long as the process. */
    public static SoftwareProvider instance() {
        SoftwareProvider p = instance;
        if (p == null) {
            synchronized (SoftwareProvider.class) {
                if (instance == null) {
                    instance = new SoftwareProvider(Config.fromSystemProperties());
                }
                p = instance;
            }
        }
        return p;
    }

    @Override
    public String name() {
        return NAME;
    }

    /** Always available: it needs nothing but a TCP port. */
    @Override
    public Availability availability() {
        java.net.InetSocketAddress a = device.listener().address();
        return Availability.ok("RC queue pairs over TCP, listening on " + a.getAddress().getHostAddress() + ":" + a.getPort());
    }

    @Override
    public List<VerbsDevice> devices() {
        return List.of(device);
    }

    /** Queue pairs joined to a peer's over an open link: zero after every owner closed its QPs. */
    public int openConnections() {
        return device.openConnections();
    }

    /** Open TCP connections (links) to and from other devices: one per peer device in use, whatever its QP count. */
    public int openLinks() {
        return device.openLinks();
    }

    /**
     * For tests of a silent peer: the device stops reading every link open now, as a process stopped
     * by a signal does. Its peers' sends are never acknowledged, their reads never answered, and their
     * connections stay open: what a reducer that never takes its answers looks like from the service.
     */
    public void stopReadingForTests() {
        device.stopReading();
    }

    /** Closes the listener, every queue pair and every link. */
    @Override
    public void close() {
        device.close();
    }

    @Override
    public String toString() {
        return NAME;
    }
}
