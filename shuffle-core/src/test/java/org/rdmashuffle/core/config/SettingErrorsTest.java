package org.rdmashuffle.core.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Verbs;

/**
 * Every bad value names the full key as the user wrote it, the value and what is accepted; durations and
 * sizes are read as the source's host reads them; unknown keys under the prefix get the nearest known key;
 * and docs/configuration.md's engine table has exactly the keys the engine reads.
 */
class SettingErrorsTest {
    private static final String P = "x.prefix.";

    private static IllegalArgumentException refused(Map<String, String> props) {
        return assertThrows(IllegalArgumentException.class, () -> EngineConfig.fromProperties(P, props::get));
    }

    @Test
    void durationsReadAsSparkReadsThem_minutesHoursAndBareMilliseconds() {
        assertEquals(Duration.ofMinutes(5), EngineConfig.fromProperties(P, Map.of(P + "fetchTimeout", "5m")::get).fetchTimeout());
        assertEquals(Duration.ofMinutes(2), EngineConfig.fromProperties(P, Map.of(P + "fetchTimeout", "2min")::get).fetchTimeout());
        assertEquals(Duration.ofSeconds(30), EngineConfig.fromProperties(P, Map.of(P + "fetchTimeout", "30s")::get).fetchTimeout());
        assertEquals(Duration.ofHours(1), EngineConfig.fromProperties(P, Map.of(P + "idleTimeout", "1h")::get).idleTimeout());
        assertEquals(Duration.ofMillis(1500), EngineConfig.fromProperties(P, Map.of(P + "connectTimeout", "1500")::get).connectTimeout());
        assertEquals("50us", EngineConfig.fromProperties(P, Map.of(P + "busyPoll", "50us")::get).describe().get("busyPoll"));
    }

    @Test
    void sizesReadWithOrWithoutB_andBareBytes() {
        assertEquals(16L << 20, EngineConfig.fromProperties(P, Map.of(P + "fetchBufferMemory", "16m")::get).fetchBufferMemory());
        assertEquals(1L << 30, EngineConfig.fromProperties(P, Map.of(P + "fetchBufferMemory", "1g")::get).fetchBufferMemory());
        assertEquals(16L << 20, EngineConfig.fromProperties(P, Map.of(P + "fetchBufferMemory", "16MB")::get).fetchBufferMemory());
        assertEquals(2L << 20, EngineConfig.fromProperties(P, Map.of(P + "fetchBufferMemory", "2097152")::get).fetchBufferMemory());
    }

    @Test
    void aBadNumber_namesTheFullKeyTheValueAndTheRange() {
        assertEquals("x.prefix.chainLength=16x: not a whole number; expected 1..1024",
                refused(Map.of(P + "chainLength", "16x")).getMessage());
    }

    @Test
    void outOfRange_namesTheFullKeyTheValueAsWrittenAndTheRange() {
        assertEquals("x.prefix.fetchTimeout=0s: out of range; expected at least 1ms",
                refused(Map.of(P + "fetchTimeout", "0s")).getMessage());
        // A default pushed out of range by another key: named as the default, with the key it must stay below.
        assertEquals("x.prefix.srq.lowWater=32 (its default): out of range; expected 0..7 (below x.prefix.srq.buffers)",
                refused(Map.of(P + "srq.buffers", "8")).getMessage());
    }

    @Test
    void aBadDuration_namesTheUnitsAccepted() {
        String m = refused(Map.of(P + "fetchTimeout", "5 minutes")).getMessage();
        assertTrue(m.startsWith("x.prefix.fetchTimeout=5 minutes: not a duration; expected at least 1ms, a duration such as 30s"), m);
        assertTrue(m.contains("us, ms, s, m or min, h, d"), m);
    }

    @Test
    void aBadSize_namesTheUnitsAccepted() {
        String m = refused(Map.of(P + "registeredMemoryLimit", "lots")).getMessage();
        assertTrue(m.startsWith("x.prefix.registeredMemoryLimit=lots: not a size; expected positive, a size such as 512k"), m);
        assertTrue(m.contains("b, k, m, g, t, p"), m);
    }

    @Test
    void aMistypedProvider_namesTheKeyAndEveryProvider() {
        assertEquals("x.prefix.provider=ibverb: not one of the choices; expected auto, ibverbs or software",
                refused(Map.of(P + "provider", "ibverb")).getMessage());
        assertEquals("x.prefix.postPath=chain: not one of the choices; expected builder or post_send",
                refused(Map.of(P + "postPath", "chain")).getMessage());
        assertEquals("x.prefix.memoryWindows=on: not one of the choices; expected false, auto or true",
                refused(Map.of(P + "memoryWindows", "on")).getMessage());
        assertEquals("x.prefix.software.sendfile=yes: not one of the choices; expected true or false",
                refused(Map.of(P + "software.sendfile", "yes")).getMessage());
    }

    /** The provider names the engine accepts are native-verbs' own (the engine may not name a provider's class). */
    @Test
    void theProviderChoicesAreNativeVerbsOwn() {
        String reason = Verbs.select("no-such-provider").reason();
        assertTrue(reason.endsWith("known: " + String.join(", ", EngineConfig.PROVIDERS)), reason);
    }

    @Test
    void everyBadValueIsNamedInOneMessage() {
        String m = refused(Map.of(P + "provider", "x", P + "chainLength", "0")).getMessage();
        assertEquals(List.of("x.prefix.provider=x: not one of the choices; expected auto, ibverbs or software",
                "x.prefix.chainLength=0: out of range; expected 1..1024"), List.of(m.split(Pattern.quote(EngineConfig.PROBLEM_SEPARATOR))));
    }

    /** A source whose host reads durations its own way: the engine takes its reading, and its description in errors. */
    @Test
    void durationsAndSizesAreTheSourcesReading() {
        Map<String, String> props = Map.of(P + "fetchTimeout", "three", P + "maxIndexMemory", "big");
        SettingSource words = new SettingSource() {
            @Override
            public String get(String key) {
                return props.get(key);
            }

            @Override
            public Duration duration(String key) {
                return get(key).equals("three") ? Duration.ofSeconds(3) : Duration.ZERO;
            }

            @Override
            public long size(String key) {
                if (get(key).equals("big")) {
                    return 1L << 30;
                }
                throw new NumberFormatException(get(key));
            }

            @Override
            public String durations() {
                return "a duration in words";
            }

            @Override
            public String sizes() {
                return "big";
            }
        };
        EngineConfig c = EngineConfig.read(P, words);
        assertEquals(Duration.ofSeconds(3), c.fetchTimeout());
        assertEquals(1L << 30, c.maxIndexMemory());
        Map<String, String> bad = Map.of(P + "maxIndexMemory", "small");
        List<String> problems = EngineConfig.problems(P, new SettingSource() {
            public String get(String key) { return bad.get(key); }
            public Duration duration(String key) { return words.duration(key); }
            public long size(String key) { return Long.parseLong(get(key)); }
            public String durations() { return words.durations(); }
            public String sizes() { return words.sizes(); }
        });
        assertEquals(List.of("x.prefix.maxIndexMemory=small: not a size; expected at least 1m, big"), problems);
    }

    @Test
    void anUnknownKeyUnderThePrefix_isWarnedAboutWithTheNearestKey() {
        Map<String, String> props = Map.of(P + "fetchTimout", "30s", P + "ownFlag", "true", "other.key", "1");
        SettingsCheck.Findings f = SettingsCheck.check(P, SettingSource.of(props::get), props.keySet(),
                List.of(new SettingsCheck.Own(P + "ownFlag", "true or false", k -> null)));
        assertEquals(List.of(), f.errors());
        assertEquals(List.of("x.prefix.fetchTimout is not a setting of rdma-shuffle; did you mean x.prefix.fetchTimeout?"),
                f.warnings());
    }

    @Test
    void anAdaptersOwnSetting_isCheckedAndNamedAsTheEnginesAre() {
        Map<String, String> props = Map.of(P + "ownFlag", "maybe", P + "chainLength", "0");
        SettingsCheck.Findings f = SettingsCheck.check(P, SettingSource.of(props::get), props.keySet(),
                List.of(new SettingsCheck.Own(P + "ownFlag", "true or false",
                        k -> props.get(k).equals("true") || props.get(k).equals("false") ? null : "not a boolean")));
        assertEquals(List.of("x.prefix.chainLength=0: out of range; expected 1..1024",
                "x.prefix.ownFlag=maybe: not a boolean; expected true or false"), f.errors());
        assertEquals(List.of(), f.warnings());
    }

    @Test
    void editDistance() {
        assertEquals(1, SettingsCheck.editDistance("fetchTimout", "fetchTimeout"));
        assertEquals(0, SettingsCheck.editDistance("a", "a"));
        assertEquals(3, SettingsCheck.editDistance("kitten", "sitting"));
    }

    /**
     * The engine's table in docs/configuration.md: a row for every key the engine reads, and none for a key
     * it lacks. A check of the checkout (structure): the Soft-RoCE guests run the tests without it.
     */
    @Test
    @org.junit.jupiter.api.Tag("structure")
    void theDocsEngineTableListsExactlyTheEnginesKeys() throws Exception {
        List<String> rows = tableKeys(Path.of("..", "docs", "configuration.md"), "## Engine");
        assertEquals(new java.util.TreeSet<>(EngineConfig.keys()), new java.util.TreeSet<>(rows));
        assertEquals(rows.size(), new java.util.HashSet<>(rows).size(), "a key has two rows: " + rows);
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
