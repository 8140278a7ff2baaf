package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.fail;

import org.junit.jupiter.api.Assumptions;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsDevice;
import org.rdmashuffle.verbs.VerbsProvider;
import org.rdmashuffle.verbs.ibverbs.IbverbsProvider;
import org.rdmashuffle.verbs.software.SoftwareProvider;

/**
 * The device engine tests run on: a fresh software provider by default, or the real libibverbs
 * device with {@code -Drdmashuffle.test.provider=ibverbs} (the Soft-RoCE guest runs them so, with
 * {@code SOFTROCE_DEVICE} and {@code SOFTROCE_GID_INDEX}). Closes what it opened.
 */
public final class TestDevice implements AutoCloseable {
    public final VerbsContext context;
    public final ConnectOptions options;
    private final SoftwareProvider owned;

    private TestDevice(VerbsProvider provider, SoftwareProvider owned, int gidIndex) {
        this.owned = owned;
        String wanted = owned == null ? System.getenv("SOFTROCE_DEVICE") : null;
        VerbsDevice device = provider.devices().stream().filter(d -> wanted == null || d.name().equals(wanted))
                .findFirst().orElseThrow(() -> new AssertionError("no device " + wanted));
        this.context = device.open();
        this.options = ConnectOptions.defaults(1, gidIndex, Mtu.min(Mtu.MTU_4096, context.queryPort(1).activeMtu()));
    }

    public static TestDevice open() {
        String name = System.getProperty("rdmashuffle.test.provider", SoftwareProvider.NAME);
        if (name.equals(IbverbsProvider.NAME)) {
            IbverbsProvider ibv = IbverbsProvider.instance();
            if (!ibv.isAvailable()) {
                if (Boolean.getBoolean("rdmashuffle.test.requireDevice")) {
                    fail("ibverbs provider unavailable: " + ibv.unavailabilityCause());
                }
                Assumptions.abort("ibverbs provider unavailable: " + ibv.unavailabilityCause());
            }
            return new TestDevice(ibv, null, Integer.parseInt(System.getenv().getOrDefault("SOFTROCE_GID_INDEX", "0")));
        }
        SoftwareProvider soft = new SoftwareProvider(SoftwareProvider.Config.loopback());
        return new TestDevice(soft, soft, 0);
    }

    @Override
    public void close() {
        context.close();
        if (owned != null) {
            owned.close();
        }
    }
}
