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
 *       usable, otherwise the software provider; one log line says which and why.
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

    /** The outcome of choosing a provider: the provider, or null with the reason none could be used. */
    public record Selection(VerbsProvider provider, String reason) {
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

    /** Chooses a provider configured by {@code settings}, and logs the choice and its reason once, at INFO. */
    public static Selection choose(String choice, ProviderSettings settings) {
        Selection s = select(choice, settings);
        LOG.log(s.provider() != null ? System.Logger.Level.INFO : System.Logger.Level.WARNING,
                "rdma-shuffle verbs provider: " + (s.provider() != null ? s.provider().name() : "none") + " -- " + s.reason());
        return s;
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
            StringBuilder why = new StringBuilder();
            for (VerbsProvider p : providers) {
                Availability a = p.availability();
                if (a.available()) {
                    return new Selection(p, "auto: " + p.name() + " is usable (" + a.cause() + ")"
                            + (why.isEmpty() ? "" : "; not " + why));
                }
                why.append(p.name()).append(": ").append(a.cause());
            }
            return new Selection(null, "auto: no provider is usable here -- " + why);
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
