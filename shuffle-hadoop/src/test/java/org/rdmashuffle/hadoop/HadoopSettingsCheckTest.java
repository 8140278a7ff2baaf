package org.rdmashuffle.hadoop;

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
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.StorageUnit;
import org.junit.jupiter.api.Test;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.config.SettingsCheck;

/**
 * rdma.shuffle.* checked where a reduce task or a service starts: each kind of bad value is refused naming
 * the full key, the value and what is accepted; durations and sizes read as Hadoop's Configuration reads
 * them; an unknown key is warned about with the nearest known one; strictConfig=false warns instead;
 * docs/configuration.md lists every key.
 */
class HadoopSettingsCheckTest {
    private static final String WHERE = "reduce task attempt_1_0001_r_000000_0";

    private static Configuration conf(String... kvs) {
        Configuration c = new Configuration(false);
        for (int i = 0; i < kvs.length; i += 2) {
            c.set(kvs[i], kvs[i + 1]);
        }
        return c;
    }

    /** The check's refusal, without the words around the problems. */
    private static String refused(String... kvs) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> HadoopSettingsCheck.check(conf(kvs), WHERE));
        String m = e.getMessage();
        String head = "rdma-shuffle: bad settings for " + WHERE + ": ";
        String tail = " (docs/configuration.md; rdma.shuffle.strictConfig=false only warns)";
        assertTrue(m.startsWith(head) && m.endsWith(tail), m);
        return m.substring(head.length(), m.length() - tail.length());
    }

    private static EngineConfig engine(String... kvs) {
        return HadoopSettings.engineConfig(conf(kvs), "127.0.0.1", 0);
    }

    @Test
    void durationsAreReadAsHadoopReadsThem() {
        for (String text : List.of("5m", "30s", "1h", "1500", "250ms", "1d")) {
            Configuration c = conf("rdma.shuffle.fetchTimeout", text);
            assertEquals(Duration.ofNanos(c.getTimeDuration("rdma.shuffle.fetchTimeout", 0, TimeUnit.MILLISECONDS, TimeUnit.NANOSECONDS)),
                    HadoopSettings.engineConfig(c, "127.0.0.1", 0).fetchTimeout(), text);
            assertEquals(List.of(), HadoopSettingsCheck.check(c, WHERE), text);
        }
        assertEquals(Duration.ofMinutes(5), engine("rdma.shuffle.fetchTimeout", "5m").fetchTimeout());
        assertEquals("50us", engine("rdma.shuffle.busyPoll", "50us").describe().get("busyPoll"));
    }

    @Test
    void sizesAreReadAsHadoopReadsThem() {
        for (String text : List.of("16m", "1g", "1.5g", "64mb", "2048KB")) {
            Configuration c = conf("rdma.shuffle.fetchBufferMemory", text);
            assertEquals((long) c.getStorageSize("rdma.shuffle.fetchBufferMemory", "0b", StorageUnit.BYTES),
                    HadoopSettings.engineConfig(c, "127.0.0.1", 0).fetchBufferMemory(), text);
        }
        assertEquals(3L << 29, engine("rdma.shuffle.fetchBufferMemory", "1.5g").fetchBufferMemory());
        // A bare number of bytes, which getStorageSize refuses, reads as getLongBytes reads it.
        assertEquals(2097152L, engine("rdma.shuffle.fetchBufferMemory", "2097152").fetchBufferMemory());
    }

    @Test
    void theEnginesOwnErrorsNameTheFullKey() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> engine("rdma.shuffle.serverThreads", "0"));
        assertEquals("rdma.shuffle.serverThreads=0: out of range; expected 1..64", e.getMessage());
    }

    @Test
    void aBadNumber() {
        assertEquals("rdma.shuffle.serverThreads=two: not a whole number; expected 1..64",
                refused("rdma.shuffle.serverThreads", "two"));
        assertEquals("rdma.shuffle.service.port=port: not a whole number; expected 0..65535 (0: any free port)",
                refused("rdma.shuffle.service.port", "port"));
    }

    @Test
    void outOfRange() {
        assertEquals("rdma.shuffle.chainLength=0: out of range; expected 1..1024", refused("rdma.shuffle.chainLength", "0"));
        assertEquals("rdma.shuffle.registeredMemoryLimit=-1g: out of range; expected positive",
                refused("rdma.shuffle.registeredMemoryLimit", "-1g"));
        assertEquals("rdma.shuffle.spark.service.port=70000: out of range; expected 0..65535 (0: any free port)",
                refused("rdma.shuffle.spark.service.port", "70000"));
    }

    @Test
    void aBadDuration_minIsNotHadoops() {
        assertEquals("rdma.shuffle.fetchTimeout=2min: not a duration; expected at least 1ms, "
                + HadoopSettings.source(conf()).durations(), refused("rdma.shuffle.fetchTimeout", "2min"));
        assertTrue(HadoopSettings.source(conf()).durations().contains("units ns, us, ms, s, m, h, d"));
    }

    @Test
    void aBadSize() {
        String m = refused("rdma.shuffle.maxIndexMemory", "lots");
        assertEquals("rdma.shuffle.maxIndexMemory=lots: not a size; expected at least 1m, " + HadoopSettings.source(conf()).sizes(), m);
        assertTrue(m.contains("units b, k or kb, m or mb"), m);
    }

    @Test
    void aBadChoiceOrProviderName() {
        assertEquals("rdma.shuffle.provider=rxe: not one of the choices; expected auto, ibverbs or software",
                refused("rdma.shuffle.provider", "rxe"));
        assertEquals("rdma.shuffle.postPath=fast: not one of the choices; expected builder or post_send",
                refused("rdma.shuffle.postPath", "fast"));
    }

    /** Hadoop's getBoolean would take the default for these; the check refuses them. */
    @Test
    void aBadBoolean() {
        assertEquals("rdma.shuffle.service.authenticate=yes: not a boolean; expected true or false",
                refused("rdma.shuffle.service.authenticate", "yes"));
        assertEquals("rdma.shuffle.mapreduce.fallback=1: not a boolean; expected true or false",
                refused("rdma.shuffle.mapreduce.fallback", "1"));
        assertEquals("rdma.shuffle.strictConfig=maybe: not a boolean; expected true or false",
                refused("rdma.shuffle.strictConfig", "maybe"));
    }

    @Test
    void anUnknownKey_isWarnedAboutWithTheNearestKey() {
        assertEquals(List.of("rdma-shuffle: rdma.shuffle.fetchTimout is not a setting of rdma-shuffle; did you mean rdma.shuffle.fetchTimeout?",
                        "rdma-shuffle: rdma.shuffle.service.prot is not a setting of rdma-shuffle; did you mean rdma.shuffle.service.port?"),
                HadoopSettingsCheck.check(conf("rdma.shuffle.fetchTimout", "30s", "rdma.shuffle.service.prot", "13570",
                        "mapreduce.other", "1"), WHERE));
    }

    @Test
    void strictConfigFalse_warnsInsteadOfThrowing() {
        List<String> warned = HadoopSettingsCheck.check(conf("rdma.shuffle.strictConfig", "false",
                "rdma.shuffle.service.authenticate", "no"), WHERE);
        assertEquals(List.of("rdma-shuffle: bad settings for " + WHERE + ", ignored (rdma.shuffle.strictConfig=false): "
                + "rdma.shuffle.service.authenticate=no: not a boolean; expected true or false"), warned);
    }

    @Test
    void goodSettingsPassSilently() {
        assertEquals(List.of(), HadoopSettingsCheck.check(conf("rdma.shuffle.provider", "software", "rdma.shuffle.service.port", "0",
                "rdma.shuffle.service.bindAddress", "0.0.0.0", "rdma.shuffle.service.authenticate", " FALSE ",
                "rdma.shuffle.mapreduce.fallback", "true", "rdma.shuffle.spark.service.port", "13571",
                "rdma.shuffle.software.bindAddress", "10.0.0.1", "rdma.shuffle.strictConfig", "true"), WHERE));
    }

    /** The shipped snippets pass the check: no bad value, no key nobody reads. */
    @Test
    void theShippedConfigurationsPass() {
        for (String name : List.of("yarn-site.xml", "mapred-site.xml")) {
            Configuration c = new Configuration(false);
            c.addResource(new org.apache.hadoop.fs.Path(Path.of("..", "conf", name).toAbsolutePath().toString()));
            assertEquals(new SettingsCheck.Findings(List.of(), List.of()), HadoopSettingsCheck.findings(c), name);
        }
    }

    /** Every rdma.shuffle.* key the adapter's code names is one the check knows. */
    @Test
    void everyKeyTheCodeReadsIsKnownToTheCheck() throws Exception {
        Set<String> known = SettingsCheck.knownKeys(HadoopSettings.PREFIX, HadoopSettingsCheck.own(conf()));
        Pattern prefixed = Pattern.compile("PREFIX \\+ \"([^\"]+)\"");
        Pattern literal = Pattern.compile("\"rdma\\.shuffle\\.([A-Za-z][^\"]*[A-Za-z])\"");
        Set<String> named = new TreeSet<>();
        for (String root : List.of("src/main/java", "src/main/java17")) {
            if (!Files.isDirectory(Path.of(root))) {
                continue;
            }
            try (Stream<Path> files = Files.walk(Path.of(root))) {
                for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                    String text = Files.readString(f);
                    for (Pattern p : List.of(prefixed, literal)) {
                        Matcher m = p.matcher(text);
                        while (m.find()) {
                            named.add(HadoopSettings.PREFIX + m.group(1));
                        }
                    }
                }
            }
        }
        assertTrue(named.contains(HadoopSettings.SERVICE_PORT) && named.contains(HadoopSettings.STRICT_CONFIG), named.toString());
        named.removeAll(known);
        assertEquals(Set.of(), named, "keys the code names that the check does not know");
    }

    /** docs/configuration.md's Hadoop table: a row for each of the adapter's own keys, and no row for a key nobody reads. */
    @Test
    void theDocsHadoopTableListsTheAdaptersKeys() throws Exception {
        List<String> rows = new ArrayList<>();
        for (String row : tableKeys(Path.of("..", "docs", "configuration.md"), "## Hadoop")) {
            if (row.startsWith(HadoopSettings.PREFIX)) {
                rows.add(row);
            }
        }
        Set<String> missing = new TreeSet<>();
        HadoopSettingsCheck.own(conf()).forEach(o -> missing.add(o.key()));
        missing.removeAll(rows);
        assertEquals(Set.of(), missing, "the adapter's keys without a row in docs/configuration.md");
        Set<String> unknown = new TreeSet<>(rows);
        unknown.removeAll(SettingsCheck.knownKeys(HadoopSettings.PREFIX, HadoopSettingsCheck.own(conf())));
        assertEquals(Set.of(), unknown, "rows of docs/configuration.md naming a key nothing reads");
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
