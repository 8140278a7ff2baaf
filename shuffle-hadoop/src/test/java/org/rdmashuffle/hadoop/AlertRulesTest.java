package org.rdmashuffle.hadoop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

/**
 * conf/prometheus/rdma-shuffle-alerts.yml, the alerts an operator loads into Prometheus: valid to
 * Prometheus' own checker ({@code promtool check rules}), and each alert behaving as its unit tests
 * (rdma-shuffle-alerts.test.yml: series in, alerts out, and the cases that must stay silent) say under
 * {@code promtool test rules}. Every alert has a case that fires and one that does not, and docs/metrics.md
 * explains each.
 */
class AlertRulesTest {
    private static final Path DIR = Path.of("../conf/prometheus");
    private static final Path RULES = DIR.resolve("rdma-shuffle-alerts.yml");
    private static final Path TESTS = DIR.resolve("rdma-shuffle-alerts.test.yml");

    private static List<String> alerts() throws Exception {
        List<String> names = new ArrayList<>();
        Matcher m = Pattern.compile("(?m)^\\s*- alert: (\\S+)$").matcher(Files.readString(RULES));
        while (m.find()) {
            names.add(m.group(1));
        }
        return names;
    }

    @Test
    void theRulesFile_passesPromtoolsCheck() throws Exception {
        Promtool.Result r = Promtool.run(DIR, null, "check", "rules", RULES.getFileName().toString());
        assertEquals(0, r.exit(), r.output());
        assertTrue(r.output().contains("SUCCESS: " + alerts().size() + " rules found"), r.output());
    }

    @Test
    void everyAlert_behavesAsItsUnitTestsSay_underPromtool() throws Exception {
        Promtool.Result r = Promtool.run(DIR, null, "test", "rules", TESTS.getFileName().toString());
        assertEquals(0, r.exit(), r.output());
        assertTrue(r.output().contains("SUCCESS"), r.output());
    }

    /** Each alert is tested firing and silent, and docs/metrics.md's Alerts section explains it. */
    @Test
    void everyAlert_isTestedBothWays_andExplained() throws Exception {
        List<String> alerts = alerts();
        assertTrue(alerts.size() >= 6, "alerts: " + alerts);
        String tests = Files.readString(TESTS);
        String docs = Files.readString(Path.of("../docs/metrics.md"));
        for (String alert : alerts) {
            Matcher fires = Pattern.compile("alertname: " + alert + "\\n\\s+exp_alerts:\\n\\s+- exp_labels").matcher(tests);
            Matcher silent = Pattern.compile("alertname: " + alert + "\\n\\s+exp_alerts: \\[\\]").matcher(tests);
            assertTrue(fires.find(), alert + " has no case where it fires");
            assertTrue(silent.find(), alert + " has no case where it stays silent");
            assertTrue(docs.contains("`" + alert + "`"), "docs/metrics.md does not explain " + alert);
        }
    }
}
