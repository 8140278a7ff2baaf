package org.rdmashuffle.verbs;

/**
 * Whether a provider can be used on this machine and, if not, why. Providers answer this
 * instead of crashing, so callers can choose another provider or report the cause.
 */
public record Availability(boolean available, String cause) {

    public static Availability ok(String what) {
        return new Availability(true, what);
    }

    public static Availability unavailable(String cause) {
        return new Availability(false, cause);
    }

    /** Throws {@link VerbsUnavailableException} naming the cause when not available. */
    public void ensureAvailable(String provider) {
        if (!available) {
            throw new VerbsUnavailableException(provider + " provider is unavailable: " + cause);
        }
    }
}
