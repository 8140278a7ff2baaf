package org.rdmashuffle.hadoop;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.hadoop.metrics2.AbstractMetric;
import org.apache.hadoop.metrics2.MetricsRecord;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.MetricsSystem;
import org.apache.hadoop.metrics2.MetricsTag;
import org.apache.hadoop.metrics2.impl.MetricsCollectorImpl;

import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.InfoSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;

import org.rdmashuffle.verbs.Carrier;
import org.rdmashuffle.verbs.Trouble;

/**
 * The NodeManager services' figures in Prometheus' terms (docs/metrics.md, "NodeManager"): what
 * {@link NodePrometheusExporter} serves. Read at each scrape from the services' metrics2 sources
 * ({@code RdmaShuffleService}, {@code RdmaSparkShuffleService}: {@code ServiceMetrics} while the engine
 * runs, {@code UnavailableEngineMetrics} where it could not start) as the NodeManager's metrics system
 * holds them, so the exposition and every metrics2 sink show the same figures, and one exporter serves
 * both services although the NodeManager loads each in a class loader of its own (the metrics system is
 * Hadoop's, shared by both). Application, service, node, kind, status and errno are labels, never part
 * of a name; counts are counters ({@code _total}), sizes bytes. Per-application series exist only for
 * the applications a service serves now (its engine's tenants: bounded by the completion queue's room,
 * removed when the application stops). Scrapes run on the exporter's threads; this holds no state.
 * Built for Java 17 (src/main/java17): a NodeManager on a JVM too old for the engine still says so here.
 */
final class NodeExposition implements MultiCollector {
    /** The services' metrics2 sources (and their records' names), and each one's {@code service} label. */
    static final Map<String, String> SERVICES = Map.of(RdmaShuffleService.METRICS_SOURCE, "mapreduce",
            RdmaSparkShuffleService.METRICS_SOURCE, "spark");
    /** metrics2 names of the per-application records: the source's name and this. */
    static final String APPLICATION_RECORD_SUFFIX = "Application";

    /** Node-level gauges: metrics2 name, then Prometheus name and help. */
    static final Map<String, String[]> NODE_GAUGES = ordered(
            "ServingConnections", "rdmashuffle_serving_connections", "reducer connections the engine serves now",
            "QueuePairs", "rdmashuffle_queue_pairs", "queue pairs of the reducer connections served now",
            "Applications", "rdmashuffle_applications", "applications with map outputs or connections on the engine now",
            "RegisteredMapOutputBytes", "rdmashuffle_registered_bytes", "bytes of map output registered as memory regions now",
            "RegisteredMemoryLimitBytes", "rdmashuffle_registered_limit_bytes",
                    "the most map-output bytes the engine registers at once (registeredMemoryLimit)",
            "MemlockLimitBytes", "rdmashuffle_memlock_limit_bytes", "the memlock limit the engine runs under (-1: none)");
    /** Node-level counters (Prometheus names without {@code _total}, which the exposition adds). */
    static final Map<String, String[]> NODE_COUNTERS = ordered(
            "Registrations", "rdmashuffle_registrations", "map output files registered as memory regions",
            "RegistrationEvictions", "rdmashuffle_registration_evictions",
                    "map-output regions deregistered to make room under the registered-memory limits");
    /** Per-application counters. */
    static final Map<String, String[]> APPLICATION_COUNTERS = ordered(
            "ServedRequests", "rdmashuffle_served_requests", "fetch requests answered, of the application",
            "ServedBlocks", "rdmashuffle_served_blocks", "blocks described to the application's reducers (read by them one-sidedly)",
            "ServedBytes", "rdmashuffle_served_bytes", "bytes of the blocks described to the application's reducers");
    static final String SERVICE_UP = "rdmashuffle_service_up";
    private static final String SERVICE_UP_HELP = "1 while the service's engine serves (carrier, provider and device say "
            + "what carries the bytes), 0 where it could not start";
    static final String UNAVAILABLE = "rdmashuffle_service_unavailable"; // exposed as ..._info
    static final String REFUSED = "rdmashuffle_refused_requests";
    static final String REGISTRATION_FAILURES = "rdmashuffle_registration_failures";
    private static final String REGISTRATION_FAILURES_HELP = "map output registrations that failed, by errno";
    /** The errnos a registration fails with that docs/troubleshooting.md names: their series exist from 0. */
    private static final List<String> ALWAYS_COUNTED_ERRNOS = List.of("ENOMEM", "EPERM", "EFAULT", "EINVAL");
    static final String COMPLETION_ERRORS = "rdmashuffle_completion_errors";

    private final MetricsSystem metricsSystem;
    private final String node;

    /**
     * @param metricsSystem where the services registered their sources (the NodeManager's)
     * @param node this NodeManager's host: the {@code node} label
     */
    NodeExposition(MetricsSystem metricsSystem, String node) {
        this.metricsSystem = metricsSystem;
        this.node = node;
    }

    @Override
    public MetricSnapshots collect() {
        Families f = new Families();
        for (Map.Entry<String, String> s : new TreeMap<>(SERVICES).entrySet()) {
            MetricsSource source = metricsSystem.getSource(s.getKey());
            if (source == null) {
                continue; // that service is not configured on this node, or not started
            }
            MetricsCollectorImpl collector = new MetricsCollectorImpl();
            try {
                source.getMetrics(collector, true);
            } catch (RuntimeException stopping) {
                System.getLogger(NodeExposition.class.getName()).log(System.Logger.Level.DEBUG,
                        () -> "rdma-shuffle: " + s.getKey() + " could not be read for Prometheus: " + stopping);
                continue;
            }
            add(f, s.getKey(), s.getValue(), collector.getRecords());
        }
        return f.snapshots();
    }

    /** Adds the Prometheus series of {@code records}, one service's (record names as its source gives them). */
    void add(Families f, String source, String service, List<? extends MetricsRecord> records) {
        for (MetricsRecord r : records) {
            if (r.name().equals(source)) {
                node(f, service, r);
            } else if (r.name().equals(source + APPLICATION_RECORD_SUFFIX)) {
                application(f, service, r);
            }
        }
    }

    private void node(Families f, String service, MetricsRecord r) {
        Map<String, Long> values = values(r);
        String[] base = {"node", node, "service", service};
        if (values.getOrDefault("EngineRunning", 0L) == 1) {
            String provider = tag(r, "Provider");
            Carrier carrier = Carrier.ofProvider(provider);
            boolean softwareProvider = carrier == Carrier.SOFTWARE_PROVIDER;
            f.gauge(SERVICE_UP, SERVICE_UP_HELP, labels(base, "carrier", carrier.label("mapreduce"),
                    "provider", provider, "device", tag(r, "Device"),
                    "device_kind", softwareProvider || !tag(r, "SoftwareDevice").isEmpty() ? "software" : "hardware"), 1);
        } else {
            f.gauge(SERVICE_UP, SERVICE_UP_HELP, labels(base, "carrier", "", "provider", "", "device", "", "device_kind", ""), 0);
            long code = values.getOrDefault("UnavailableCode", 99L);
            String reason = tag(r, "Reason");
            f.unavailable(labels(base, "code", code > 0 && code < 99 ? String.format("RS%02d", code) : "",
                    "reason", Trouble.in(reason).map(Trouble::key).orElse("other")));
        }
        java.util.Set<String> errnos = new java.util.TreeSet<>();
        for (Map.Entry<String, Long> v : values.entrySet()) {
            String name = v.getKey();
            String[] gauge = NODE_GAUGES.get(name);
            String[] counter = NODE_COUNTERS.get(name);
            if (gauge != null) {
                f.gauge(gauge[0], gauge[1], labels(base), v.getValue());
            } else if (counter != null) {
                f.counter(counter[0], counter[1], labels(base), v.getValue());
            } else if (name.startsWith("RegistrationFailures") && name.length() > "RegistrationFailures".length()) {
                errnos.add(name.substring("RegistrationFailures".length()));
                f.counter(REGISTRATION_FAILURES, REGISTRATION_FAILURES_HELP,
                        labels(base, "errno", name.substring("RegistrationFailures".length())), v.getValue());
            } else if (name.startsWith("CompletionErrors") && name.length() > "CompletionErrors".length()) {
                f.counter(COMPLETION_ERRORS, "work completions that failed, by status",
                        labels(base, "status", name.substring("CompletionErrors".length())), v.getValue());
            }
        }
        if (values.getOrDefault("EngineRunning", 0L) == 1) {
            alwaysCountedErrnos(f, base, errnos); // from 0, so rate() and the dashboard see them before the first failure
        }
    }

    private void alwaysCountedErrnos(Families f, String[] base, java.util.Set<String> seen) {
        for (String errno : ALWAYS_COUNTED_ERRNOS) {
            if (!seen.contains(errno)) {
                f.counter(REGISTRATION_FAILURES, REGISTRATION_FAILURES_HELP, labels(base, "errno", errno), 0);
            }
        }
    }

    private void application(Families f, String service, MetricsRecord r) {
        String[] base = {"node", node, "service", service, "application", tag(r, "Application")};
        for (Map.Entry<String, Long> v : values(r).entrySet()) {
            String name = v.getKey();
            String[] counter = APPLICATION_COUNTERS.get(name);
            if (counter != null) {
                f.counter(counter[0], counter[1], labels(base), v.getValue());
            } else if (name.startsWith("Refused") && !name.equals("RefusedRequests")) {
                String kind = name.substring("Refused".length());
                f.counter(REFUSED, "fetch requests refused, of the application, by kind (docs/metrics.md)",
                        labels(base, "kind", Character.toLowerCase(kind.charAt(0)) + kind.substring(1)), v.getValue());
            }
        }
    }

    private static Map<String, Long> values(MetricsRecord r) {
        Map<String, Long> m = new TreeMap<>();
        for (AbstractMetric x : r.metrics()) {
            m.put(x.name(), x.value().longValue());
        }
        return m;
    }

    private static String tag(MetricsRecord r, String name) {
        for (MetricsTag t : r.tags()) {
            if (t.name().equals(name)) {
                return t.value() == null ? "" : t.value();
            }
        }
        return "";
    }

    private static Labels labels(String[] base, String... more) {
        String[] all = new String[base.length + more.length];
        System.arraycopy(base, 0, all, 0, base.length);
        System.arraycopy(more, 0, all, base.length, more.length);
        return Labels.of(all);
    }

    private static Map<String, String[]> ordered(String... triples) {
        Map<String, String[]> m = new LinkedHashMap<>();
        for (int i = 0; i < triples.length; i += 3) {
            m.put(triples[i], new String[] {triples[i + 1], triples[i + 2]});
        }
        return java.util.Collections.unmodifiableMap(m);
    }

    /** The series of one scrape, gathered by family (one family's points may come from both services). */
    static final class Families {
        private final Map<String, String> help = new TreeMap<>();
        private final Map<String, List<GaugeSnapshot.GaugeDataPointSnapshot>> gauges = new TreeMap<>();
        private final Map<String, List<CounterSnapshot.CounterDataPointSnapshot>> counters = new TreeMap<>();
        private final List<InfoSnapshot.InfoDataPointSnapshot> unavailable = new ArrayList<>();

        void gauge(String name, String text, Labels labels, double value) {
            help.putIfAbsent(name, text);
            gauges.computeIfAbsent(name, n -> new ArrayList<>())
                    .add(GaugeSnapshot.GaugeDataPointSnapshot.builder().labels(labels).value(value).build());
        }

        void counter(String name, String text, Labels labels, double value) {
            help.putIfAbsent(name, text);
            counters.computeIfAbsent(name, n -> new ArrayList<>())
                    .add(CounterSnapshot.CounterDataPointSnapshot.builder().labels(labels).value(value).build());
        }

        void unavailable(Labels labels) {
            unavailable.add(InfoSnapshot.InfoDataPointSnapshot.builder().labels(labels).build());
        }

        MetricSnapshots snapshots() {
            MetricSnapshots.Builder b = MetricSnapshots.builder();
            gauges.forEach((name, points) -> {
                GaugeSnapshot.Builder g = GaugeSnapshot.builder().name(name).help(help.get(name));
                points.forEach(g::dataPoint);
                b.metricSnapshot(g.build());
            });
            counters.forEach((name, points) -> {
                CounterSnapshot.Builder c = CounterSnapshot.builder().name(name).help(help.get(name));
                points.forEach(c::dataPoint);
                b.metricSnapshot(c.build());
            });
            if (!unavailable.isEmpty()) {
                InfoSnapshot.Builder i = InfoSnapshot.builder().name(UNAVAILABLE)
                        .help("1 while the service's engine could not start: code is the RS code (docs/troubleshooting.md), "
                                + "reason its word; the NodeManager's log and the metrics2 tag Reason say more");
                unavailable.forEach(i::dataPoint);
                b.metricSnapshot(i.build());
            }
            return b.build();
        }
    }
}
