package org.rdmashuffle.spark.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/**
 * conf/grafana's dashboard as issue 53 asks it to be on a shared Prometheus: variables for the datasource,
 * application, executor and node; every query filtered by them; no {@code __name__} regex; a unit on every
 * panel. That its Spark queries name metrics of a real scrape is MetricsPluginTest's (it has the scrape).
 */
public class GrafanaDashboardTest {
    static final Path DASHBOARD = Path.of("../conf/grafana/rdma-shuffle-dashboard.json");
    private static final Pattern METRIC = Pattern.compile("\\b(rdmashuffle_[a-z0-9_]+)\\b");
    private static final String NODE_ROW = "NodeManagers";

    static JsonNode dashboard() throws Exception {
        return new ObjectMapper().readTree(Files.readString(DASHBOARD));
    }

    /** The queries of the Spark panels (those before the NodeManagers' row), or of the NodeManagers' panels. */
    static List<String> queries(boolean spark) throws Exception {
        List<String> out = new ArrayList<>();
        boolean inSpark = true;
        for (JsonNode p : dashboard().get("panels")) {
            if (p.get("type").asText().equals("row")) {
                inSpark = !p.get("title").asText().startsWith(NODE_ROW);
                continue;
            }
            if (inSpark == spark) {
                p.get("targets").forEach(t -> out.add(t.get("expr").asText()));
            }
        }
        return out;
    }

    /** Every metric name the Spark panels' queries and the variables' Spark queries name. */
    public static Set<String> sparkMetricNames() throws Exception {
        Set<String> names = new TreeSet<>();
        List<String> texts = new ArrayList<>(queries(true));
        texts.add(variable("application").get("definition").asText());
        texts.add(variable("executor").get("definition").asText());
        for (String q : texts) {
            Matcher m = METRIC.matcher(q);
            while (m.find()) {
                names.add(m.group(1));
            }
        }
        return names;
    }

    private static JsonNode variable(String name) throws Exception {
        for (JsonNode v : dashboard().get("templating").get("list")) {
            if (v.get("name").asText().equals(name)) {
                return v;
            }
        }
        throw new AssertionError("the dashboard has no variable " + name);
    }

    @Test
    void variables_filterEveryQuery_noNameRegex_aUnitOnEveryPanel() throws Exception {
        assertFalse(Files.readString(DASHBOARD).contains("__name__"), "a __name__ regex in the dashboard");
        assertEquals("datasource", variable("datasource").get("type").asText());
        assertTrue(variable("application").get("definition").asText().startsWith("label_values("));
        assertTrue(variable("executor").get("definition").asText().startsWith("label_values("));
        assertEquals(".+", variable("executor").get("allValue").asText(),
                "All executors must not match the NodeManagers' series, which have no executor label");
        assertNotNull(variable("node"));
        List<String> spark = queries(true);
        List<String> nodes = queries(false);
        assertTrue(spark.size() >= 15 && nodes.size() >= 10, spark + " " + nodes);
        for (String q : spark) {
            Matcher m = Pattern.compile("rdmashuffle_[a-z_]+\\{([^}]*)}").matcher(q);
            assertTrue(m.find(), "a Spark query without a selector: " + q);
            m.reset();
            while (m.find()) {
                String sel = m.group(1);
                for (String f : List.of("application=~\"$application\"", "executor=~\"$executor\"", "host=~\"$node\"")) {
                    assertTrue(sel.contains(f), "a Spark selector without " + f + ": " + q);
                }
            }
        }
        for (String q : nodes) {
            Matcher m = Pattern.compile("rdmashuffle_[a-z_]+\\{([^}]*)}").matcher(q);
            assertTrue(m.find(), q);
            m.reset();
            while (m.find()) {
                assertTrue(m.group(1).contains("node=~\"$node\"") && m.group(1).contains("service=~\".+\""),
                        "a NodeManager selector without the node filter (and service, which Spark's series lack): " + q);
            }
        }
        Set<String> bytes = Set.of("bytes", "Bps");
        for (JsonNode p : dashboard().get("panels")) {
            if (p.get("type").asText().equals("row")) {
                continue;
            }
            String title = p.get("title").asText();
            String unit = p.path("fieldConfig").path("defaults").path("unit").asText("");
            assertFalse(unit.isEmpty(), "no unit on " + title);
            if (p.get("type").asText().equals("timeseries")) {
                assertFalse(p.path("fieldConfig").path("defaults").path("custom").path("axisLabel").asText("").isEmpty(),
                        "no axis label on " + title);
            }
            // No panel mixes bytes with counts: a panel in bytes queries only _bytes metrics, and one in counts none.
            for (JsonNode t : p.get("targets")) {
                Matcher m = METRIC.matcher(t.get("expr").asText());
                while (m.find()) {
                    boolean isBytes = m.group(1).matches(".*_bytes(_total)?");
                    assertEquals(bytes.contains(unit) || unit.equals("percentunit") && isBytes, isBytes,
                            title + " (" + unit + ") queries " + m.group(1));
                }
            }
        }
    }
}
