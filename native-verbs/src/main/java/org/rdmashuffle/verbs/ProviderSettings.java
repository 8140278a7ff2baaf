package org.rdmashuffle.verbs;

import java.util.Map;
import java.util.TreeMap;

/**
 * Settings a provider takes when it is chosen ({@link Verbs#choose(String, ProviderSettings)}), by key:
 * each provider reads the keys it knows and ignores the others (the software provider's are {@code
 * software.*}: {@link org.rdmashuffle.verbs.software.SoftwareProvider#SETTING_BIND_ADDRESS} and
 * siblings). The layers above pass their configuration's values here, never through system
 * properties, so two engines in one process may run on differently configured providers.
 */
public record ProviderSettings(Map<String, String> values) {
    public static final ProviderSettings NONE = new ProviderSettings(Map.of());

    public ProviderSettings {
        values = Map.copyOf(values);
    }

    /** The value of {@code key}, or {@code orElse} if it is not set. */
    public String get(String key, String orElse) {
        return values.getOrDefault(key, orElse);
    }

    @Override
    public String toString() {
        return new TreeMap<>(values).toString();
    }
}
