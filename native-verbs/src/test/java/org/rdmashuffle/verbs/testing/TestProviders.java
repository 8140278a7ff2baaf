package org.rdmashuffle.verbs.testing;

import static org.junit.jupiter.api.Assertions.fail;

import org.junit.jupiter.api.Assumptions;
import org.rdmashuffle.verbs.Availability;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsDevice;
import org.rdmashuffle.verbs.VerbsProvider;
import org.rdmashuffle.verbs.ibverbs.IbverbsProvider;
import org.rdmashuffle.verbs.software.SoftwareProvider;

/**
 * The one place tests choose the provider they run on, and skip or fail without it: every module's
 * tests (this module's conformance suite, shuffle-core's engine and transport tests) take it from
 * here, through native-verbs' test jar.
 *
 * <ul>
 * <li>{@code -Drdmashuffle.test.provider=ibverbs|software} chooses; each suite passes its own default
 *     (the conformance suite: {@code ibverbs}, so {@code mvn test} proves the device where there is
 *     one; engine tests: {@code software}, a fresh loopback provider per test);
 * <li>without a usable device the test is skipped with the provider's reason; with
 *     {@code -Drdmashuffle.test.requireDevice=true} (the Soft-RoCE guest sets it) it fails instead, so
 *     a run meant to prove the real device cannot pass by skipping;
 * <li>on the device, {@code SOFTROCE_DEVICE} (or {@code -Drdmashuffle.test.device}) names it and
 *     {@code SOFTROCE_GID_INDEX} its GID index.
 * </ul>
 */
public final class TestProviders {
    public static final String PROVIDER_PROPERTY = "rdmashuffle.test.provider";
    public static final String REQUIRE_DEVICE_PROPERTY = "rdmashuffle.test.requireDevice";

    private TestProviders() {
    }

    /** The provider's name the run asks for, or {@code defaultName}. */
    public static String chosen(String defaultName) {
        return System.getProperty(PROVIDER_PROPERTY, defaultName);
    }

    /** Whether the run is on the real device (libibverbs). */
    public static boolean usesDevice(String defaultName) {
        return IbverbsProvider.NAME.equals(chosen(defaultName));
    }

    /** The process's instance of the chosen provider (never closed by a test). */
    public static VerbsProvider shared(String defaultName) {
        String name = chosen(defaultName);
        return switch (name) {
            case IbverbsProvider.NAME -> IbverbsProvider.instance();
            case SoftwareProvider.NAME -> SoftwareProvider.instance();
            default -> throw new IllegalArgumentException("unknown provider in -D" + PROVIDER_PROPERTY + ": " + name);
        };
    }

    /**
     * A provider for one test: the device (shared), or a software provider of its own on loopback,
     * which {@link #close} closes.
     */
    public static VerbsProvider fresh(String defaultName) {
        if (usesDevice(defaultName)) {
            return requireAvailable(IbverbsProvider.instance());
        }
        return new SoftwareProvider(SoftwareProvider.Config.loopback());
    }

    /** Skips (or, when a device is required, fails) unless {@code provider} is usable here. */
    public static <P extends VerbsProvider> P requireAvailable(P provider) {
        Availability a = provider.availability();
        if (!a.available()) {
            String why = provider.name() + " provider unavailable: " + a.cause();
            if (Boolean.getBoolean(REQUIRE_DEVICE_PROPERTY)) {
                fail(why + " (and -D" + REQUIRE_DEVICE_PROPERTY + "=true)");
            }
            Assumptions.abort(why);
        }
        return provider;
    }

    /** Closes a provider {@link #fresh} made for the test; the shared device stays. */
    public static void close(VerbsProvider provider) {
        if (provider instanceof SoftwareProvider s && s != SoftwareProvider.instance()) {
            s.close();
        }
    }

    /** Connected queue pairs the software provider still carries (0 on the device, which does not count them). */
    public static int openConnections(VerbsProvider provider) {
        return provider instanceof SoftwareProvider s ? s.openConnections() : 0;
    }

    /** The device name the run asks for on libibverbs, or null for any. */
    public static String wantedDevice() {
        return System.getProperty("rdmashuffle.test.device", System.getenv("SOFTROCE_DEVICE"));
    }

    /** The GID index the run forces on a Soft-RoCE device, or null to choose. */
    public static String forcedGidIndex(VerbsDevice device) {
        return System.getProperty("rdmashuffle.test.gidIndex",
                device.name().startsWith("rxe") ? System.getenv("SOFTROCE_GID_INDEX") : null);
    }

    /** An opened device of a fresh provider, with options to connect its queue pairs: what unit tests of one layer use. */
    public static final class OpenDevice implements AutoCloseable {
        public final VerbsProvider provider;
        public final VerbsContext context;
        public final ConnectOptions options;

        private OpenDevice(VerbsProvider provider) {
            this.provider = provider;
            String wanted = usesDevice(SoftwareProvider.NAME) ? wantedDevice() : null;
            VerbsDevice device = provider.devices().stream().filter(d -> wanted == null || d.name().equals(wanted))
                    .findFirst().orElseThrow(() -> new AssertionError("no device " + wanted));
            this.context = device.open();
            String gid = forcedGidIndex(device);
            this.options = ConnectOptions.defaults(1, gid == null ? 0 : Integer.parseInt(gid),
                    Mtu.min(Mtu.MTU_4096, context.queryPort(1).activeMtu()));
        }

        @Override
        public void close() {
            context.close();
            TestProviders.close(provider);
        }
    }

    /** A device to run one test on: the software provider's by default ({@link #fresh}), closed with it. */
    public static OpenDevice openDevice() {
        return new OpenDevice(fresh(SoftwareProvider.NAME));
    }
}
