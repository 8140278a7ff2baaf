package org.rdmashuffle.hadoop;

import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.rdmashuffle.core.config.SettingsCheck;

/**
 * Every {@code rdma.shuffle.*} setting checked at once where it is first used: a reduce task's shuffle
 * ({@link EngineShuffleConsumer}) and a NodeManager service at its start. The engine's keys are read
 * as {@link HadoopSettings#engineConfig} reads them; the adapter's own as Hadoop's {@code Configuration}
 * reads them, except that a boolean that is not {@code true} or {@code false} is an error here where
 * {@code getBoolean} would quietly take the default.
 */
final class HadoopSettingsCheck {
    private static final System.Logger LOG = System.getLogger(HadoopSettingsCheck.class.getName());
    private static final String BOOLEAN = "true or false";
    private static final String PORT = "0..65535 (0: any free port)";

    private HadoopSettingsCheck() {
    }

    /** The adapter's own keys under {@code rdma.shuffle.} (not the engine's), each with the check of its value. */
    static List<SettingsCheck.Own> own(Configuration conf) {
        return List.of(
                port(conf, HadoopSettings.SERVICE_PORT),
                port(conf, HadoopKeys.SPARK_SERVICE_PORT),
                port(conf, HadoopKeys.PROMETHEUS_PORT),
                new SettingsCheck.Own(HadoopKeys.PROMETHEUS_BIND_ADDRESS, "an address to listen on", key -> null),
                new SettingsCheck.Own(HadoopSettings.SERVICE_BIND_ADDRESS, "an address to listen on", key -> null),
                bool(conf, HadoopSettings.SERVICE_AUTHENTICATE),
                bool(conf, HadoopSettings.MAPREDUCE_FALLBACK),
                bool(conf, HadoopSettings.STRICT_CONFIG),
                bool(conf, HadoopSettings.STOP_ON_FAILURE));
    }

    /** What is wrong with {@code conf}'s {@code rdma.shuffle.*} settings: bad values and unknown keys. */
    static SettingsCheck.Findings findings(Configuration conf) {
        List<String> keysSet = new ArrayList<>();
        for (String key : conf.getPropsWithPrefix(HadoopSettings.PREFIX).keySet()) {
            keysSet.add(HadoopSettings.PREFIX + key);
        }
        return SettingsCheck.check(HadoopSettings.PREFIX, HadoopSettings.source(conf), keysSet, own(conf));
    }

    /**
     * Checks every {@code rdma.shuffle.*} setting of {@code conf} for {@code where} (e.g. "the reduce task
     * attempt_..."): a key under the prefix that nothing reads gets one WARN naming the nearest known key;
     * bad values throw one {@link IllegalArgumentException} naming each full key, its value and what is
     * accepted, or with {@code rdma.shuffle.strictConfig=false} are one WARN. Returns the WARN lines logged.
     */
    static List<String> check(Configuration conf, String where) {
        SettingsCheck.Findings f = findings(conf);
        List<String> warned = new ArrayList<>();
        for (String w : f.warnings()) {
            warned.add("rdma-shuffle: " + w);
        }
        if (!f.errors().isEmpty()) {
            if (strict(conf)) {
                throw new IllegalArgumentException("rdma-shuffle: bad settings for " + where + ": " + f.errorLine()
                        + " (docs/configuration.md; " + HadoopSettings.STRICT_CONFIG + "=false only warns)");
            }
            warned.add("rdma-shuffle: bad settings for " + where + ", ignored (" + HadoopSettings.STRICT_CONFIG + "=false): "
                    + f.errorLine());
        }
        for (String w : warned) {
            LOG.log(System.Logger.Level.WARNING, w);
        }
        return warned;
    }

    /** strictConfig as set; a value that is not a boolean is itself an error, so strict. */
    private static boolean strict(Configuration conf) {
        String v = conf.getTrimmed(HadoopSettings.STRICT_CONFIG);
        return v == null || !v.equalsIgnoreCase("false");
    }

    /** A boolean as Configuration.getBoolean takes it (true or false in any case, spaces trimmed); anything else is refused. */
    private static SettingsCheck.Own bool(Configuration conf, String key) {
        return new SettingsCheck.Own(key, BOOLEAN, k -> {
            String v = conf.getTrimmed(k);
            return v.equalsIgnoreCase("true") || v.equalsIgnoreCase("false") ? null : "not a boolean";
        });
    }

    /** A port as Configuration.getInt reads it (decimal, or hexadecimal after 0x). */
    private static SettingsCheck.Own port(Configuration conf, String key) {
        return new SettingsCheck.Own(key, PORT, k -> {
            int port;
            try {
                port = conf.getInt(k, 0);
            } catch (NumberFormatException e) {
                return "not a whole number";
            }
            return port >= 0 && port <= 65535 ? null : "out of range";
        });
    }
}
