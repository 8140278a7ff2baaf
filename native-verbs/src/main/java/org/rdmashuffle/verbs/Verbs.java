package org.rdmashuffle.verbs;

import java.util.List;
import java.util.Locale;

import org.rdmashuffle.verbs.ibverbs.IbverbsProvider;
import org.rdmashuffle.verbs.software.SoftwareProvider;

/**
 * Entry point: the providers in this build and the choice between them.
 *
 * <ul>
 *   <li>{@code auto} (default): the libibverbs provider when a device with an active port is
 *       usable; the software provider where the host has no device at all; nothing (the host's own
 *       transport) where a device is there but unusable ({@link #auto}). One log line says which and why.
 *   <li>{@code ibverbs}: the libibverbs provider, or an error naming why it cannot run.
 *   <li>{@code software}: always the software provider (RC over TCP).
 * </ul>
 */
public final class Verbs {
    public static final String AUTO = "auto";
    private static final System.Logger LOG = System.getLogger(Verbs.class.getName());

    private Verbs() {
    }

    /** Every provider in this build, in order of preference, with default settings. */
    public static List<VerbsProvider> providers() {
        return providers(ProviderSettings.NONE);
    }

    /** Every provider in this build, in order of preference, configured by {@code settings}. */
    public static List<VerbsProvider> providers(ProviderSettings settings) {
        return List.of(IbverbsProvider.instance(), SoftwareProvider.shared(SoftwareProvider.Config.of(settings)));
    }

    /**
     * The outcome of choosing a provider: the provider, or null with the reason none could be used.
     *
     * @param settledFor what the libibverbs provider lacked when {@code auto} settled for the software
     *        provider ({@link Trouble#NO_DEVICE}, {@link Trouble#PLATFORM}), else null
     */
    public record Selection(VerbsProvider provider, String reason, Trouble settledFor) {
        public Selection(VerbsProvider provider, String reason) {
            this(provider, reason, null);
        }

        public VerbsProvider orElseThrow() {
            if (provider == null) {
                throw new VerbsUnavailableException(reason);
            }
            return provider;
        }
    }

    /** Chooses a provider with default settings and logs the choice and its reason once, at INFO. */
    public static Selection choose(String choice) {
        return choose(choice, ProviderSettings.NONE);
    }

    /**
     * Chooses a provider configured by {@code settings}, and logs the choice and its reason: at INFO, or at
     * WARNING when none is usable, and once per process at WARNING when {@code auto} settled for the software
     * provider (later engines of the process say it at INFO).
     */
    public static Selection choose(String choice, ProviderSettings settings) {
        Selection s = select(choice, settings);
        boolean warn = s.provider() == null || (s.settledFor() != null && SETTLED_WARNED.compareAndSet(false, true));
        LOG.log(warn ? System.Logger.Level.WARNING : System.Logger.Level.INFO,
                "rdma-shuffle verbs provider: " + (s.provider() != null ? s.provider().name() : "none") + " -- " + s.reason());
        return s;
    }

    /** Whether this process has said at WARNING that auto settled for the software provider. */
    private static final java.util.concurrent.atomic.AtomicBoolean SETTLED_WARNED = new java.util.concurrent.atomic.AtomicBoolean();

    /** Test hook: as if this process had not yet said it (the WARNING-once test runs beside others in one JVM). */
    static void forgetSettledWarning() {
        SETTLED_WARNED.set(false);
    }

    /** What the settled-for line tells an operator who wants the host's own transport instead. */
    public static final String HOST_TRANSPORT_INSTEAD = "provider=ibverbs (spark.shuffle.rdma.provider, rdma.shuffle.provider) "
            + "would instead leave the shuffle to Spark's or MapReduce's own transport (docs/providers.md)";

    /**
     * What {@code auto} chooses, from what each provider says of itself (docs/providers.md, "How the choice is
     * made"): the libibverbs provider when it is usable; the software provider only when this host has no
     * verbs stack to speak of -- no libibverbs, no device ({@link Trouble#NO_DEVICE}) or an architecture
     * the provider does not run on ({@link Trouble#PLATFORM}); and nothing when a device is there but unusable
     * (a port down, a memlock limit too small, a probe that failed), so the engine does not start and the
     * host's own transport carries the shuffle, saying why. A host with a device is meant for RDMA: a fixable
     * fault there is not hidden behind a TCP emulation that costs more CPU than Spark's own transport.
     */
    public static Selection auto(VerbsProvider ibverbs, Availability ibverbsAvailability, VerbsProvider software,
                                 Availability softwareAvailability) {
        if (ibverbsAvailability.available()) {
            return new Selection(ibverbs, "auto: " + ibverbs.name() + " is usable (" + ibverbsAvailability.cause() + ")");
        }
        String not = "not " + ibverbs.name() + ": " + ibverbsAvailability.cause();
        Trouble lacked = Trouble.in(ibverbsAvailability.cause()).orElse(null);
        if (lacked != Trouble.NO_DEVICE && lacked != Trouble.PLATFORM) {
            return new Selection(null, "auto: " + ibverbs.name() + " cannot use this host's device (or its probe failed), and auto "
                    + "settles for the software provider only on a host without one (provider=software would) -- " + not);
        }
        if (!softwareAvailability.available()) {
            return new Selection(null, "auto: no provider is usable here -- " + not + "; " + software.name() + ": "
                    + softwareAvailability.cause());
        }
        return new Selection(software, "auto: settled for the software provider (RC over TCP in the JVM, not RDMA), "
                + software.name() + " is usable (" + softwareAvailability.cause() + "); " + not + "; " + HOST_TRANSPORT_INSTEAD,
                lacked);
    }

    /** Chooses a provider by name ({@code auto}, {@code ibverbs}, {@code software}) without logging; never throws. */
    public static Selection select(String choice) {
        return select(choice, ProviderSettings.NONE);
    }

    /** {@link #select(String)} of providers configured by {@code settings}; never throws (bad settings are the reason). */
    public static Selection select(String choice, ProviderSettings settings) {
        List<VerbsProvider> providers;
        try {
            providers = providers(settings);
        } catch (IllegalArgumentException e) {
            return new Selection(null, e.getMessage());
        }
        String wanted = choice == null ? AUTO : choice.trim().toLowerCase(Locale.ROOT);
        if (wanted.equals(AUTO)) {
            return auto(providers.get(0), providers.get(0).availability(), providers.get(1), providers.get(1).availability());
        }
        for (VerbsProvider p : providers) {
            if (p.name().equals(wanted)) {
                Availability a = p.availability();
                return a.available()
                        ? new Selection(p, wanted + " (configured): " + a.cause())
                        : new Selection(null, wanted + " (configured) is unavailable: " + a.cause());
            }
        }
        return new Selection(null, "unknown provider '" + choice + "'; known: auto, "
                + String.join(", ", providers.stream().map(VerbsProvider::name).toList()));
    }
}
