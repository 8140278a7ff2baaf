package org.rdmashuffle.core.config;

import java.time.Duration;
import java.util.Locale;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where an adapter's settings come from, and how durations and sizes are read there: the host engine's
 * own way (Spark's {@code JavaUtils}, Hadoop's {@code Configuration}), so a value that works for the
 * host's settings works for ours. Keys are full keys, with the adapter's prefix.
 */
public interface SettingSource {
    /** The text set for {@code key}, or null if it is not set. */
    String get(String key);

    /**
     * The duration set for {@code key}, read as the host reads durations; an {@link IllegalArgumentException}
     * (a {@link NumberFormatException} is one) if it does not read as one.
     */
    Duration duration(String key);

    /** The size in bytes set for {@code key}, read as the host reads sizes; throws as {@link #duration} does. */
    long size(String key);

    /** What a duration may look like here, for errors: examples and units. */
    String durations();

    /** What a size may look like here, for errors: examples and units. */
    String sizes();

    /**
     * Settings from {@code lookup}, durations and sizes read the engine's own way ({@link EngineConfig#set}
     * reads them so): durations in {@code us}, {@code ms}, {@code s}, {@code m} or {@code min}, {@code h},
     * {@code d}, a bare number being milliseconds; sizes in {@code b}, {@code k}, {@code m}, {@code g},
     * {@code t}, {@code p}, each optionally followed by {@code b}, a bare number being bytes: Spark's units.
     */
    static SettingSource of(Function<String, String> lookup) {
        return new SettingSource() {
            @Override
            public String get(String key) {
                return lookup.apply(key);
            }

            @Override
            public Duration duration(String key) {
                return parseDuration(lookup.apply(key));
            }

            @Override
            public long size(String key) {
                return parseSize(lookup.apply(key));
            }

            @Override
            public String durations() {
                return "a duration such as 30s, 5m, 1h, 100ms or 50us (units us, ms, s, m or min, h, d; "
                        + "a bare number is milliseconds)";
            }

            @Override
            public String sizes() {
                return "a size such as 512k, 16m or 1g (units b, k, m, g, t, p, each optionally followed by b; "
                        + "a bare number is bytes)";
            }
        };
    }

    /** The engine's own reading of a duration (see {@link #of}). */
    static Duration parseDuration(String text) {
        Matcher m = Pattern.compile("(-?[0-9]+)([a-z]*)").matcher(text.trim().toLowerCase(Locale.ROOT));
        if (!m.matches()) {
            throw new IllegalArgumentException("not a duration: " + text);
        }
        long n = Long.parseLong(m.group(1));
        return switch (m.group(2)) {
            case "us" -> Duration.ofNanos(Math.multiplyExact(n, 1000L));
            case "", "ms" -> Duration.ofMillis(n);
            case "s" -> Duration.ofSeconds(n);
            case "m", "min" -> Duration.ofMinutes(n);
            case "h" -> Duration.ofHours(n);
            case "d" -> Duration.ofDays(n);
            default -> throw new IllegalArgumentException("unknown unit " + m.group(2) + " in " + text);
        };
    }

    /** The engine's own reading of a size (see {@link #of}). */
    static long parseSize(String text) {
        Matcher m = Pattern.compile("(-?[0-9]+)([a-z]*)").matcher(text.trim().toLowerCase(Locale.ROOT));
        if (!m.matches()) {
            throw new IllegalArgumentException("not a size: " + text);
        }
        int shift = switch (m.group(2)) {
            case "", "b" -> 0;
            case "k", "kb" -> 10;
            case "m", "mb" -> 20;
            case "g", "gb" -> 30;
            case "t", "tb" -> 40;
            case "p", "pb" -> 50;
            default -> throw new IllegalArgumentException("unknown unit " + m.group(2) + " in " + text);
        };
        return Math.multiplyExact(Long.parseLong(m.group(1)), 1L << shift);
    }
}
