package org.rdmashuffle.verbs.software;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.security.MessageDigest;
import java.nio.charset.StandardCharsets;
import java.util.List;

import org.rdmashuffle.verbs.Availability;
import org.rdmashuffle.verbs.ProviderSettings;
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
    /** Setting: the IPv4 address the device's data listener binds to, its GID (default 127.0.0.1). */
    public static final String SETTING_BIND_ADDRESS = "software.bindAddress";
    /** Setting: the TCP port of the data listener, its LID field (default 0, any free port). */
    public static final String SETTING_PORT = "software.port";
    /**
     * Setting: answer reads of files registered with {@code registerOwnedFile} with sendfile (default
     * false: on loopback and veth it measured slower than writing from the mapping).
     */
    public static final String SETTING_SENDFILE = "software.sendfile";

    /** The process's shared devices, one per configuration asked for: engines configured alike share one listener. */
    private static final java.util.Map<Config, SoftwareProvider> SHARED = new java.util.concurrent.ConcurrentHashMap<>();

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

        /** The configuration {@code settings} name ({@link #SETTING_BIND_ADDRESS} and siblings); a bad value names its key. */
        public static Config of(ProviderSettings settings) {
            String host = settings.get(SETTING_BIND_ADDRESS, "127.0.0.1");
            InetAddress address;
            try {
                address = InetAddress.getByName(host);
            } catch (UnknownHostException e) {
                throw new IllegalArgumentException(SETTING_BIND_ADDRESS + "=" + host + " is not an address", e);
            }
            String port = settings.get(SETTING_PORT, "0");
            int p;
            try {
                p = Integer.parseInt(port.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(SETTING_PORT + "=" + port + " is not a port", e);
            }
            if (p < 0 || p > 65535) {
                throw new IllegalArgumentException(SETTING_PORT + "=" + port + " is not a port");
            }
            return new Config(address, p, Admission.ISSUED_TOKEN,
                    Boolean.parseBoolean(settings.get(SETTING_SENDFILE, "false").trim()));
        }
    }

    public SoftwareProvider(Config config) {
        this.device = new SoftDevice(config);
    }

    /** The process's shared device with default settings (loopback, any port); lives as long as the process. */
    public static SoftwareProvider instance() {
        return shared(Config.of(ProviderSettings.NONE));
    }

    /**
     * The process's shared device of this configuration, made at first use; lives as long as the
     * process. Engines asking for the same configuration share it (one listener, one link per peer).
     */
    public static SoftwareProvider shared(Config config) {
        return SHARED.computeIfAbsent(config, SoftwareProvider::new);
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

    /** Its completions are made by its link loops and posting threads. */
    @Override
    public boolean completesOnItsOwnThreads() {
        return true;
    }

    /** Its listener's address (its GID): where its queue pairs' links are dialled from and to. */
    @Override
    public InetAddress dataPathAddress(org.rdmashuffle.verbs.VerbsContext context) {
        org.rdmashuffle.verbs.GidEntry e = context.queryGid(1, 0);
        return e == null ? null : e.gid().ipv4Address();
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
