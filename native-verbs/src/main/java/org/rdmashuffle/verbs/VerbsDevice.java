package org.rdmashuffle.verbs;

/** One device in the provider's device list ({@code struct ibv_device}). */
public interface VerbsDevice {
    /** Kernel name, e.g. {@code mlx5_0} or {@code rxe0}. */
    String name();

    /** {@code ibv_get_device_guid}, in host byte order. */
    long guid();

    /** Opens the device ({@code ibv_open_device}); the caller owns the context. */
    VerbsContext open();
}
