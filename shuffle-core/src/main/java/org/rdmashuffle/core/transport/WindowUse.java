package org.rdmashuffle.core.transport;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.DeviceAttributes;

/**
 * Whether the serving side hands reducers memory-window keys instead of its regions' rkeys: each
 * serving connection reads its map outputs through type 2 windows bound for its own queue pair
 * ({@code server.ServingWindows}), so a descriptor taken from one connection is refused on every other,
 * even of the same application, and an idle reducer's access is taken back at its lease's end without
 * deregistering the region under the others. Decided once per engine, at start, from {@code
 * memoryWindows} and the device; the reason is logged with the engine's start.
 *
 * <p>Windows need type 2 windows on the device, one queue pair per serving connection (a type 2
 * window is bound to one QP, and a reducer spreads its reads over all of its connection's: with
 * windows the server accepts one), and pinned registration (on-demand regions under windows were
 * not measured on any kernel here).
 *
 * @param on     whether serving connections read through windows
 * @param reason why, in words for the log
 */
public record WindowUse(boolean on, String reason) {
    /**
     * Window binds one application's serving connections may have posted and not completed: what each
     * serving queue pair's send queue and the application's share of a completion queue make room
     * for (a flush of all of them included). An answer needing more waits for some to complete.
     */
    public static final int BIND_SLOTS_PER_TENANT = 256;

    /** Windows off, for tests and where {@code memoryWindows=false}. */
    public static final WindowUse OFF = new WindowUse(false, "plain regions (" + EngineConfig.KEY_MEMORY_WINDOWS + "=false)");

    /** Decides from the setting, the device and how memory is registered. */
    public static WindowUse choose(EngineConfig config, DeviceAttributes attributes, MemoryRegistration registration) {
        if (config.memoryWindows() == EngineConfig.MemoryWindows.FALSE) {
            return OFF;
        }
        String type2 = attributes.memoryWindowType2();
        String against = type2 == null || !attributes.supportsMemoryWindows() ? "the device has no type 2 memory windows"
                : config.qpsPerPeer() > 1 ? EngineConfig.KEY_QPS_PER_PEER + "=" + config.qpsPerPeer()
                        + " (a type 2 window is bound to one queue pair; windows need " + EngineConfig.KEY_QPS_PER_PEER + "=1)"
                : registration.onDemand() ? "memory is registered on demand (windows over on-demand regions are not supported here)"
                : null;
        if (against != null) {
            return new WindowUse(false, "plain regions: " + against);
        }
        return new WindowUse(true, "memory windows (type " + type2 + ", one per served output and connection): "
                + EngineConfig.KEY_MEMORY_WINDOWS + "=" + config.memoryWindows().name().toLowerCase(java.util.Locale.ROOT));
    }

    /** Whether a setting asked for windows that it does not get: logged as a warning, not info. */
    public boolean refusedWhatWasAskedFor(EngineConfig config) {
        return !on && config.memoryWindows() == EngineConfig.MemoryWindows.TRUE;
    }
}
