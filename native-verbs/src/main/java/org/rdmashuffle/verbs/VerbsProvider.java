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
