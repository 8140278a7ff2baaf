package org.rdmashuffle.spark;

import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.spark.SparkConf;
import org.apache.spark.network.util.JavaUtils;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.config.SettingSource;
import org.rdmashuffle.core.config.SettingsCheck;

/**
 * How the Spark adapter reads {@code spark.shuffle.rdma.*}: the engine's keys with durations and sizes
 * read as Spark reads its own ({@code spark.network.timeout=5m}, {@code spark.reducer.maxSizeInFlight=48m}),
 * and the adapter's own keys, each checked the way the code that reads it reads it ({@link SparkSettingsCheck}).
 */
public final class SparkSettings {
    public static final String PREFIX = RdmaShuffleManager.PREFIX;
    /**
     * Bad {@code spark.shuffle.rdma.*} values stop the application at the driver's start (default true);
     * false: a WARN names them and the application starts (an executor whose engine cannot start with
     * them then uses Spark's built-in transport, or fails with {@code fallback=false}).
     */
    public static final String STRICT_CONFIG = PREFIX + "strictConfig";

    private static final String BOOLEAN = "true or false";

    private SparkSettings() {
    }

    /** The engine's settings from {@code conf}, read as Spark reads durations and sizes; errors name the full keys. */
    public static EngineConfig engineConfig(SparkConf conf) {
        return EngineConfig.read(PREFIX, source(conf));
    }

    /** {@code conf}'s settings, durations and sizes read with Spark's own parsing ({@code JavaUtils}, {@code SparkConf}). */
    public static SettingSource source(SparkConf conf) {
        return new SettingSource() {
            @Override
            public String get(String key) {
                return conf.get(key, null);
            }

            @Override
            public Duration duration(String key) {
                String text = conf.get(key);
                // SparkConf.getTimeAsMs reads a bare number as milliseconds; with a unit, read to the
                // microsecond (Spark's finest unit) so that busyPoll's 50us is not 0 ms.
                return text.trim().matches("-?[0-9]+") ? Duration.ofMillis(conf.getTimeAsMs(key))
                        : Duration.of(JavaUtils.timeStringAs(text, TimeUnit.MICROSECONDS), ChronoUnit.MICROS);
            }

            @Override
            public long size(String key) {
                return conf.getSizeAsBytes(key);
            }

            @Override
            public String durations() {
                return "a duration as Spark reads it, such as 30s, 5m, 1h, 100ms or 50us (units us, ms, s, m or min, h, d; "
                        + "a bare number is milliseconds)";
            }

            @Override
            public String sizes() {
                return "a size as Spark reads it, such as 512k, 16m or 1g (units b, k, m, g, t, p, each optionally "
                        + "followed by b; a bare number is bytes)";
            }
        };
    }

    /**
     * The adapter's own keys under {@link #PREFIX} (not the engine's), each with the check of its value as
     * the code that reads it reads it: SparkConf's getBoolean, getInt, getTimeAsMs.
     */
    static List<SettingsCheck.Own> own(SparkConf conf) {
        return List.of(
                bool(conf, RdmaShuffleManager.FALLBACK),
                bool(conf, RdmaShuffleManager.START_AT_EXECUTOR_START),
                bool(conf, RdmaShuffleManager.SERVICE_ENABLED),
                new SettingsCheck.Own(RdmaShuffleManager.SERVICE_PORT, "1..65535", key -> {
                    int port;
                    try {
                        port = conf.getInt(key, RdmaShuffleManager.DEFAULT_SERVICE_PORT);
                    } catch (IllegalArgumentException e) {
                        return "not a whole number";
                    }
                    return port >= 1 && port <= 65535 ? null : "out of range";
                }),
                new SettingsCheck.Own(RdmaShufflePlugin.REPORT_INTERVAL, source(conf).durations()
                        + "; below 100ms counts as 100ms", key -> {
                    try {
                        conf.getTimeAsMs(key);
                        return null;
                    } catch (IllegalArgumentException e) {
                        return "not a duration";
                    }
                }),
                bool(conf, RdmaShufflePlugin.PER_LINK),
                bool(conf, RdmaShufflePlugin.PROMETHEUS),
                bool(conf, STRICT_CONFIG));
    }

    /** A boolean as SparkConf.getBoolean reads it (true or false in any case, nothing else; no spaces). */
    private static SettingsCheck.Own bool(SparkConf conf, String key) {
        return new SettingsCheck.Own(key, BOOLEAN, k -> {
            try {
                conf.getBoolean(k, false);
                return null;
            } catch (IllegalArgumentException e) {
                return "not a boolean";
            }
        });
    }
}
