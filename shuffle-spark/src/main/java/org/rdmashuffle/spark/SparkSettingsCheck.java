package org.rdmashuffle.spark;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.SparkConf;
import org.rdmashuffle.core.config.SettingsCheck;

/**
 * Every {@code spark.shuffle.rdma.*} setting checked once, on the driver, when the application starts:
 * otherwise a bad value is found only by each executor's engine as it starts, and with {@code fallback=true}
 * (the default) costs one WARN per executor and the whole job on Spark's built-in transport.
 */
public final class SparkSettingsCheck {
    private static final System.Logger LOG = System.getLogger(SparkSettingsCheck.class.getName());

    private SparkSettingsCheck() {
    }

    /** What is wrong with {@code conf}'s {@code spark.shuffle.rdma.*} settings: bad values and unknown keys. */
    public static SettingsCheck.Findings findings(SparkConf conf) {
        List<String> keysSet = new ArrayList<>();
        for (scala.Tuple2<String, String> kv : conf.getAllWithPrefix(SparkSettings.PREFIX)) {
            keysSet.add(SparkSettings.PREFIX + kv._1());
        }
        return SettingsCheck.check(SparkSettings.PREFIX, SparkSettings.source(conf), keysSet, SparkSettings.own(conf));
    }

    /**
     * Checks every {@code spark.shuffle.rdma.*} setting of {@code conf}, for the driver's start. A key under
     * the prefix that nothing reads gets one WARN naming the nearest known key. Bad values throw one
     * {@link IllegalArgumentException} naming each full key, its value and what is accepted; with
     * {@code spark.shuffle.rdma.strictConfig=false} they are one WARN instead. Returns the WARN lines logged.
     */
    public static List<String> checkOnDriver(SparkConf conf) {
        SettingsCheck.Findings f = findings(conf);
        List<String> warned = new ArrayList<>();
        for (String w : f.warnings()) {
            warned.add("rdma-shuffle: " + w);
        }
        if (!f.errors().isEmpty()) {
            if (strict(conf)) {
                throw new IllegalArgumentException("rdma-shuffle: bad settings: " + f.errorLine() + " (docs/configuration.md; "
                        + SparkSettings.STRICT_CONFIG + "=false starts the application anyway)");
            }
            warned.add("rdma-shuffle: bad settings, ignored at the driver (" + SparkSettings.STRICT_CONFIG + "=false): "
                    + f.errorLine() + "; an executor whose engine cannot start with them uses Spark's built-in transport ("
                    + RdmaShuffleManager.FALLBACK + "=false fails it instead)");
        }
        for (String w : warned) {
            LOG.log(System.Logger.Level.WARNING, w);
        }
        return warned;
    }

    /** strictConfig as set; a value that is not a boolean is itself an error, so strict. */
    private static boolean strict(SparkConf conf) {
        try {
            return conf.getBoolean(SparkSettings.STRICT_CONFIG, true);
        } catch (IllegalArgumentException e) {
            return true;
        }
    }
}
