package org.rdmashuffle.verbs;

import java.util.List;
import java.util.Locale;

import org.rdmashuffle.verbs.ibverbs.IbverbsProvider;

/**
 * Entry point: the providers in this build and the choice between them.
 *
 * <p>{@code auto} takes the libibverbs provider when a device with an active port is usable and
 * says why not otherwise; {@code ibverbs} insists on it. (The software provider, for machines
 * without RDMA hardware, joins this list when it is built.)
 */
public final class Verbs {
    public static final String AUTO = "auto";

    private Verbs() {
    }

    /** Every provider in this build, in order of preference. */
    public static List<VerbsProvider> providers() {
        return List.of(IbverbsProvider.instance());
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

    /** Chooses a provider by name ({@code auto}, {@code ibverbs}); never throws for an unusable one. */
    public static Selection select(String choice) {
        String wanted = choice == null ? AUTO : choice.trim().toLowerCase(Locale.ROOT);
        if (wanted.equals(AUTO)) {
            StringBuilder why = new StringBuilder();
            for (VerbsProvider p : providers()) {
                Availability a = p.availability();
                if (a.available()) {
                    return new Selection(p, "auto: " + p.name() + " is usable (" + a.cause() + ")");
                }
                why.append(p.name()).append(": ").append(a.cause()).append("; ");
            }
            return new Selection(null, "auto: no provider is usable here -- " + why
                    + "no software provider is part of this build yet");
        }
        for (VerbsProvider p : providers()) {
            if (p.name().equals(wanted)) {
                Availability a = p.availability();
                return a.available()
                        ? new Selection(p, wanted + " (configured): " + a.cause())
                        : new Selection(null, wanted + " (configured) is unavailable: " + a.cause());
            }
        }
        return new Selection(null, "unknown provider '" + choice + "'; known: auto, "
                + String.join(", ", providers().stream().map(VerbsProvider::name).toList()));
    }
}
