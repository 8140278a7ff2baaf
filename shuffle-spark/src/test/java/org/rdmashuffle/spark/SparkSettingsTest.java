package org.rdmashuffle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.config.SettingsCheck;

/**
 * spark.shuffle.rdma.* checked on the driver: each kind of bad value is refused naming the full key, the
 * value and what is accepted; durations and sizes read as Spark reads them; an unknown key is warned about
 * with the nearest known one; strictConfig=false warns instead; docs/configuration.md lists every key.
 */
class SparkSettingsTest {
    private static SparkConf conf(String... kvs) {
        SparkConf c = new SparkConf(false);
        for (int i = 0; i < kvs.length; i += 2) {
            c.set(kvs[i], kvs[i + 1]);
        }
        return c;
    }

    /** The driver's refusal, without the advice around the problems. */
    private static String refused(String... kvs) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SparkSettingsCheck.checkOnDriver(conf(kvs)));
        String m = e.getMessage();
        assertTrue(m.startsWith("rdma-shuffle: bad settings: ") && m.endsWith(" (docs/configuration.md; "
                + "spark.shuffle.rdma.strictConfig=false starts the application anyway)"), m);
        return m.substring("rdma-shuffle: bad settings: ".length(), m.indexOf(" (docs/configuration.md;"));
    }

    @Test
    void durationsAreReadAsSparkReadsThem() {
        for (String text : List.of("5m", "30s", "1h", "2min", "1500", "250ms")) {
            SparkConf c = conf("spark.shuffle.rdma.fetchTimeout", text);
            assertEquals(Duration.ofMillis(c.getTimeAsMs("spark.shuffle.rdma.fetchTimeout")), SparkSettings.engineConfig(c).fetchTimeout(), text);
            assertEquals(List.of(), SparkSettingsCheck.checkOnDriver(c), text);
        }
        // Below a millisecond, to the microsecond (getTimeAsMs would make it 0).
        assertEquals("50us", SparkSettings.engineConfig(conf("spark.shuffle.rdma.busyPoll", "50us")).describe().get("busyPoll"));
    }

    @Test
    void sizesAreReadAsSparkReadsThem() {
        for (String text : List.of("16m", "1g", "64mb", "2097152", "1024k")) {
            SparkConf c = conf("spark.shuffle.rdma.fetchBufferMemory", text);
            assertEquals(c.getSizeAsBytes("spark.shuffle.rdma.fetchBufferMemory"), SparkSettings.engineConfig(c).fetchBufferMemory(), text);
        }
    }

    @Test
    void aBadNumber() {
        assertEquals("spark.shuffle.rdma.serverThreads=two: not a whole number; expected 1..64",
                refused("spark.shuffle.rdma.serverThreads", "two"));
        assertEquals("spark.shuffle.rdma.service.port=x: not a whole number; expected 1..65535",
                refused("spark.shuffle.rdma.service.port", "x"));
    }

    @Test
    void outOfRange() {
        assertEquals("spark.shuffle.rdma.chainLength=0: out of range; expected 1..1024",
                refused("spark.shuffle.rdma.chainLength", "0"));
        assertEquals("spark.shuffle.rdma.fetchBufferMemory=512k: out of range; expected at least 1m",
                refused("spark.shuffle.rdma.fetchBufferMemory", "512k"));
        assertEquals("spark.shuffle.rdma.service.port=70000: out of range; expected 1..65535",
                refused("spark.shuffle.rdma.service.port", "70000"));
    }

    @Test
    void aBadDuration() {
        assertEquals("spark.shuffle.rdma.fetchTimeout=5 min: not a duration; expected at least 1ms, "
                        + SparkSettings.source(conf()).durations(),
                refused("spark.shuffle.rdma.fetchTimeout", "5 min"));
        // Nanoseconds are Hadoop's, not Spark's.
        String m = refused("spark.shuffle.rdma.connectTimeout", "500ns");
        assertTrue(m.startsWith("spark.shuffle.rdma.connectTimeout=500ns: not a duration; expected at least 1ms, a duration as Spark reads it"), m);
        assertTrue(m.contains("units us, ms, s, m or min, h, d"), m);
        assertEquals("spark.shuffle.rdma.metrics.reportInterval=often: not a duration; expected "
                        + SparkSettings.source(conf()).durations() + "; below 100ms counts as 100ms",
                refused("spark.shuffle.rdma.metrics.reportInterval", "often"));
    }

    @Test
    void aBadSize() {
        String m = refused("spark.shuffle.rdma.layoutCacheMemory", "1.5m");
        assertEquals("spark.shuffle.rdma.layoutCacheMemory=1.5m: not a size; expected at least 64k, "
                + SparkSettings.source(conf()).sizes(), m);
        assertTrue(m.contains("units b, k, m, g, t, p"), m);
    }

    @Test
    void aBadChoiceOrProviderName() {
        assertEquals("spark.shuffle.rdma.provider=softwre: not one of the choices; expected auto, ibverbs or software",
                refused("spark.shuffle.rdma.provider", "softwre"));
        assertEquals("spark.shuffle.rdma.onDemandPaging=sometimes: not one of the choices; expected auto, true or false",
                refused("spark.shuffle.rdma.onDemandPaging", "sometimes"));
    }

    @Test
    void aBadBoolean() {
        assertEquals("spark.shuffle.rdma.fallback=yes: not a boolean; expected true or false",
                refused("spark.shuffle.rdma.fallback", "yes"));
        assertEquals("spark.shuffle.rdma.software.sendfile=on: not one of the choices; expected true or false",
                refused("spark.shuffle.rdma.software.sendfile", "on"));
        assertEquals("spark.shuffle.rdma.strictConfig=maybe: not a boolean; expected true or false",
                refused("spark.shuffle.rdma.strictConfig", "maybe"));
        assertEquals("spark.shuffle.rdma.metrics.prometheus=off: not a boolean; expected true or false",
                refused("spark.shuffle.rdma.metrics.prometheus", "off"));
        // The driver's plugin reads it itself too (it also runs beside Spark's own shuffle manager, which checks nothing).
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> RdmaShufflePlugin.prometheus(new SparkConf(false).set(RdmaShufflePlugin.PROMETHEUS, "off")));
        assertEquals("spark.shuffle.rdma.metrics.prometheus=off: not a boolean; expected true or false", e.getMessage());
        assertTrue(RdmaShufflePlugin.prometheus(new SparkConf(false)), "on by default");
    }

    @Test
    void everyBadValueIsNamedAtOnce() {
        assertEquals("spark.shuffle.rdma.chainLength=0: out of range; expected 1..1024 | "
                        + "spark.shuffle.rdma.service.enabled=1: not a boolean; expected true or false",
                refused("spark.shuffle.rdma.chainLength", "0", "spark.shuffle.rdma.service.enabled", "1"));
    }

    @Test
    void anUnknownKey_isWarnedAboutWithTheNearestKey_andDoesNotStopTheApplication() {
        assertEquals(List.of("rdma-shuffle: spark.shuffle.rdma.fetchTimout is not a setting of rdma-shuffle; "
                        + "did you mean spark.shuffle.rdma.fetchTimeout?",
                        "rdma-shuffle: spark.shuffle.rdma.metrics.perlink is not a setting of rdma-shuffle; "
                        + "did you mean spark.shuffle.rdma.metrics.perLink?"),
                SparkSettingsCheck.checkOnDriver(conf("spark.shuffle.rdma.fetchTimout", "30s",
                        "spark.shuffle.rdma.metrics.perlink", "true", "spark.shuffle.other", "1")));
    }

    @Test
    void strictConfigFalse_warnsInsteadOfThrowing() {
        List<String> warned = SparkSettingsCheck.checkOnDriver(conf("spark.shuffle.rdma.strictConfig", "false",
                "spark.shuffle.rdma.fetchTimeout", "soon"));
        assertEquals(1, warned.size(), warned.toString());
        assertTrue(warned.get(0).startsWith("rdma-shuffle: bad settings, ignored at the driver (spark.shuffle.rdma.strictConfig=false): "
                + "spark.shuffle.rdma.fetchTimeout=soon: not a duration; expected at least 1ms, a duration as Spark reads it"), warned.get(0));
    }

    @Test
    void goodSettingsPassSilently() {
        assertEquals(List.of(), SparkSettingsCheck.checkOnDriver(conf("spark.shuffle.rdma.provider", "software",
                "spark.shuffle.rdma.fallback", "FALSE", "spark.shuffle.rdma.service.port", "13571",
                "spark.shuffle.rdma.metrics.reportInterval", "2s", "spark.shuffle.rdma.srq.buffers", "64",
                "spark.shuffle.rdma.software.bindAddress", "10.0.0.1", "spark.shuffle.rdma.strictConfig", "true")));
    }

    /** The shipped spark-defaults files pass the driver's check: no bad value, no key nobody reads. */
    @Test
    void theShippedSparkDefaultsPass() throws Exception {
        for (Path file : List.of(Path.of("..", "conf", "spark-defaults.conf"), Path.of("..", "conf", "spark-defaults-yarn.conf"),
                Path.of("..", "conf", "spark-defaults-nics.conf"), Path.of("..", "conf", "kubernetes", "spark-defaults-k8s.conf"))) {
            java.util.Properties props = new java.util.Properties();
            try (var in = Files.newBufferedReader(file)) {
                props.load(in);
            }
            SparkConf c = new SparkConf(false);
            props.stringPropertyNames().forEach(k -> c.set(k, props.getProperty(k).trim())); // Spark trims them too
            assertEquals(new SettingsCheck.Findings(List.of(), List.of()), SparkSettingsCheck.findings(c), file.toString());
        }
    }

    /**
     * Every spark.shuffle.rdma.* key the adapter's code names (a {@code PREFIX + "..."} or a literal) is
     * one the check knows; otherwise the check would warn that a real setting is unknown.
     */
    @Test
    void everyKeyTheCodeReadsIsKnownToTheCheck() throws Exception {
        Set<String> known = SettingsCheck.knownKeys(SparkSettings.PREFIX, SparkSettings.own(conf()));
        Pattern prefixed = Pattern.compile("PREFIX \\+ \"([^\"]+)\"");
        Pattern literal = Pattern.compile("\"spark\\.shuffle\\.rdma\\.([A-Za-z][^\"]*[A-Za-z])\"");
        Set<String> named = new TreeSet<>();
        for (String root : List.of("src/main/java", "src/main/java17")) {
            try (Stream<Path> files = Files.walk(Path.of(root))) {
                for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                    String text = Files.readString(f);
                    for (Pattern p : List.of(prefixed, literal)) {
                        Matcher m = p.matcher(text);
                        while (m.find()) {
                            named.add(SparkSettings.PREFIX + m.group(1));
                        }
                    }
                }
            }
        }
        assertTrue(named.contains(RdmaShuffleManager.FALLBACK) && named.contains(SparkSettings.STRICT_CONFIG), named.toString());
        named.removeAll(known);
        assertEquals(Set.of(), named, "keys the code names that the check does not know");
    }

    /** docs/configuration.md's Spark table: a row for each of the adapter's own keys, and no row for a key nobody reads. */
    @Test
    void theDocsSparkTableListsTheAdaptersKeys() throws Exception {
        List<String> rows = new ArrayList<>();
        for (String row : tableKeys(Path.of("..", "docs", "configuration.md"), "## Spark")) {
            if (row.startsWith(SparkSettings.PREFIX)) {
                rows.add(row);
            }
        }
        Set<String> own = new TreeSet<>();
        SparkSettings.own(conf()).forEach(o -> own.add(o.key()));
        Set<String> missing = new TreeSet<>(own);
        missing.removeAll(rows);
        assertEquals(Set.of(), missing, "the adapter's keys without a row in docs/configuration.md");
        Set<String> unknown = new TreeSet<>(rows);
        unknown.removeAll(SettingsCheck.knownKeys(SparkSettings.PREFIX, SparkSettings.own(conf())));
        assertEquals(Set.of(), unknown, "rows of docs/configuration.md naming a key nothing reads");
        assertTrue(EngineConfig.keys().contains(EngineConfig.KEY_SOFTWARE_BIND_ADDRESS));
    }

    /** The first column's keys of the table under {@code heading} (to the next heading). */
    static List<String> tableKeys(Path doc, String heading) throws Exception {
        List<String> keys = new ArrayList<>();
        boolean in = false;
        Pattern row = Pattern.compile("^\\| `([^`]+)` \\|");
        for (String line : Files.readAllLines(doc)) {
            if (line.startsWith("## ")) {
                in = line.startsWith(heading);
                continue;
            }
            Matcher m = row.matcher(line);
            if (in && m.find()) {
                keys.add(m.group(1));
            }
        }
        assertTrue(!keys.isEmpty(), "no table under " + heading + " in " + doc);
        return keys;
    }
}
