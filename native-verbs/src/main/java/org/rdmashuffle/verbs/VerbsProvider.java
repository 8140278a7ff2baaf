package org.rdmashuffle.verbs;

import java.util.List;

/**
 * A source of verbs devices. The libibverbs provider drives real RDMA devices; other providers
 * implement the same semantics elsewhere. Everything above this layer is written against this
 * interface and its objects, never against a provider's classes.
 */
public interface VerbsProvider {

    /** Short name used in configuration and logs, e.g. {@code ibverbs}. */
    String name();

    /** Whether this provider can run here, and if not, why. Never throws. */
    Availability availability();

    default boolean isAvailable() {
        return availability().available();
    }

    /** Why the provider cannot run here, or null when it can. */
    default String unavailabilityCause() {
        Availability a = availability();
        return a.available() ? null : a.cause();
    }

    /**
     * Whether this provider's completions are made by threads of its own in this process (a device
     * emulated in software) rather than by hardware. The layers above tune to it: a poller that
     * busy-polls would take the core from the very thread making the completion, and posting wakes
     * those threads while the poster is still in its call.
     */
    default boolean completesOnItsOwnThreads() {
        return false;
    }

    /**
     * The IP address this provider's data path connects from, for a provider whose queue pairs are
     * joined over IP by the provider itself (a peer then dials back only the address its control
     * connection came from, so control connections must come from here); null for a device, whose
     * GID is not an address the process connects from.
     */
    default java.net.InetAddress dataPathAddress(VerbsContext context) {
        return null;
    }

    /**
     * How many bytes this process may pin by registering memory: the memlock limit (RLIMIT_MEMLOCK),
     * or -1 where nothing limits it (unlimited, CAP_IPC_LOCK effective, or a provider whose regions
     * pin nothing: the software provider). Registering beyond it fails with ENOMEM, unless on demand.
     */
    default long pinnableBytes() {
        return -1;
    }

    /** The devices this provider sees ({@code ibv_get_device_list}). */
    List<VerbsDevice> devices();

    /** Opens a device by name ({@code ibv_open_device}). */
    default VerbsContext open(String deviceName) {
        for (VerbsDevice d : devices()) {
            if (d.name().equals(deviceName)) {
                return d.open();
            }
        }
        throw new VerbsException("ibv_open_device", Errno.ENODEV,
                "no device named '" + deviceName + "' (devices: " + devices().stream().map(VerbsDevice::name).toList() + ")");
    }
}
