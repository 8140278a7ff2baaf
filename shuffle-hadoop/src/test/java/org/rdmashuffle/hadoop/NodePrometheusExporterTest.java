package org.rdmashuffle.hadoop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.ShuffleHandler;
import org.apache.hadoop.metrics2.MetricsRecord;
import org.apache.hadoop.metrics2.impl.MetricsCollectorImpl;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.server.api.ApplicationInitializationContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.Trouble;

/**
 * The node's one Prometheus exposition (NodePrometheusExporter): shared by both services whichever starts
 * first, closed with its owner; a port that is bad or taken never takes a service down; an engine that
 * could not start is {@code rdmashuffle_service_up} 0 with its RS code. Scraped over HTTP.
 */
class NodePrometheusExporterTest {
    @TempDir
    Path dir;

    private static Configuration engineSettings(Configuration conf) {
        conf.setInt(ShuffleHandler.SHUFFLE_PORT_CONFIG_KEY, 0);
        conf.setInt(HadoopSettings.SERVICE_PORT, 0);
        conf.setInt(HadoopKeys.SPARK_SERVICE_PORT, 0);
        conf.set(HadoopSettings.SERVICE_BIND_ADDRESS, "127.0.0.1");
        conf.set(HadoopSettings.PREFIX + EngineConfig.KEY_PROVIDER, "software");
        conf.set(HadoopKeys.PROMETHEUS_BIND_ADDRESS, "127.0.0.1");
        conf.set(HadoopKeys.NODE_MANAGER_HOSTNAME, "node-3");
        return conf;
    }

    private RdmaShuffleService mapReduceService(Configuration conf) {
        RdmaShuffleService s = new RdmaShuffleService();
        s.setAuxiliaryLocalPathHandler(new FakeLocalDirs(dir.resolve("local")));
        s.init(conf);
        s.start();
        return s;
    }

    private RdmaSparkShuffleService sparkService(Configuration conf) {
        RdmaSparkShuffleService s = new RdmaSparkShuffleService(new RdmaSparkShuffleServiceTest.SparkServiceStandIn());
        s.setAuxiliaryLocalPathHandler(new FakeLocalDirs(dir.resolve("local")));
        s.init(conf);
        s.start();
        return s;
    }

    @Test
    void bothServicesOfANode_shareOneExposition_ownedByTheFirstToStart_andClosedWithIt() throws Exception {
        Configuration conf = engineSettings(new JobConf(false));
        conf.set(HadoopKeys.PROMETHEUS_PORT, "0");
        RdmaShuffleService mapReduce = mapReduceService(conf);
        InetSocketAddress at;
        try {
            at = mapReduce.prometheus().address();
            assertNotNull(at, "the first service to start serves it: " + mapReduce.prometheus().why());
            RdmaSparkShuffleService spark = sparkService(conf);
            try {
                assertNull(spark.prometheus().address(), "a second exposition on the node");
                assertTrue(spark.prometheus().why().contains("other rdma-shuffle service"), spark.prometheus().why());
                ApplicationId app = ApplicationId.newInstance(1_700_000_000_000L, 3);
                spark.initializeApplication(new ApplicationInitializationContext("alice", app,
                        ByteBuffer.wrap("spark-app-secret-0123456789abcdef".getBytes(StandardCharsets.UTF_8))));
                // A reducer of the Spark application connects: its tenant (and its series) exist from then on.
                try (TestReducer r = new TestReducer(app.toString(), "spark-app-secret-0123456789abcdef".getBytes(StandardCharsets.UTF_8))) {
                    assertTrue(r.fetch(spark.rdmaAddress(), org.rdmashuffle.core.protocol.BlockId.of(0, 1, 0)).failure() != null,
                            "no such output was written");
                }
                Scrape scrape = Scrape.of(at);
                for (String service : List.of("mapreduce", "spark")) {
                    assertEquals(1, scrape.value("rdmashuffle_service_up", Map.of("node", "node-3", "service", service,
                            "carrier", "software_provider")), service + "\n" + scrape.text());
                }
                Map<String, String> sparkApp = Map.of("service", "spark", "application", app.toString(), "kind", "noSuchOutput");
                assertEquals(1, scrape.value("rdmashuffle_refused_requests_total", sparkApp), "the Spark reducer's refusal");
                assertEquals(valueOf(spark.metrics(), RdmaSparkShuffleService.METRICS_SOURCE, "ServingConnections"),
                        scrape.value("rdmashuffle_serving_connections", Map.of("service", "spark")), "read through metrics2");
                assertEquals(0, Promtool.run(dir, scrape.text(), "check", "metrics").exit(), scrape.text());
            } finally {
                spark.stop();
            }
            assertEquals(List.of(), Scrape.of(at).find("rdmashuffle_service_up", Map.of("service", "spark")),
                    "a stopped service's figures");
        } finally {
            mapReduce.stop();
        }
        assertThrows(java.io.IOException.class, () -> Scrape.of(at), "the exposition outlived its owner");
        assertNull(DefaultMetricsSystem.instance().getSource(NodePrometheusExporter.CLAIM_SOURCE), "the claim outlived its owner");
        RdmaSparkShuffleService next = sparkService(conf);
        try {
            assertNotNull(next.prometheus().address(), "a service starting later claims it anew: " + next.prometheus().why());
        } finally {
            next.stop();
        }
    }

    @Test
    void aTakenPort_isOneWarningNamingTheKey_andTheServiceServesAsBefore() throws Exception {
        try (ServerSocket other = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            Configuration conf = engineSettings(new JobConf(false));
            conf.setInt(HadoopKeys.PROMETHEUS_PORT, other.getLocalPort());
            RdmaShuffleService s = mapReduceService(conf);
            try {
                String why = s.prometheus().why();
                assertNull(s.prometheus().address());
                assertTrue(why.contains("127.0.0.1:" + other.getLocalPort()) && why.contains(HadoopKeys.PROMETHEUS_PORT), why);
                assertNull(s.unavailable(), "the engine serves");
                assertNotNull(s.rdmaAddress());
                assertNull(DefaultMetricsSystem.instance().getSource(NodePrometheusExporter.CLAIM_SOURCE), "a claim with no server");
            } finally {
                s.stop();
            }
        }
    }

    @Test
    void aBadPort_isRefusedNamingItsFullKey_andTheNodeManagerStaysUp() throws Exception {
        Configuration conf = engineSettings(new JobConf(false));
        conf.set(HadoopKeys.PROMETHEUS_PORT, "http");
        RdmaShuffleService s = mapReduceService(conf);
        try {
            String why = s.prometheus().why();
            assertNull(s.prometheus().address());
            assertTrue(why.contains(HadoopKeys.PROMETHEUS_PORT + "=http") && why.contains("not a port"), why);
            // A bad rdma.shuffle.* value is refused at the service's start like any other (strictConfig).
            String engine = String.valueOf(s.unavailable());
            assertTrue(engine.contains(HadoopKeys.PROMETHEUS_PORT) && engine.contains("http"), engine);
            assertTrue(ShuffleHandler.deserializeMetaData(s.getMetaData()) > 0, "the stock HTTP shuffle serves");
        } finally {
            s.stop();
        }
    }

    /** An engine that could not start (libibverbs asked for on a machine without a device): up 0, its RS code and word. */
    @Test
    void anEngineThatCouldNotStart_isServiceUpZero_withTheCodeOfWhy() throws Exception {
        Configuration conf = engineSettings(new JobConf(false));
        conf.set(HadoopSettings.PREFIX + EngineConfig.KEY_PROVIDER, "ibverbs");
        conf.set(HadoopKeys.PROMETHEUS_PORT, "0");
        RdmaShuffleService s = mapReduceService(conf);
        try {
            String why = s.unavailable();
            assertNotNull(why, "libibverbs started here: this test needs a machine without a usable RDMA device");
            Scrape scrape = Scrape.of(s.prometheus().address());
            Map<String, String> here = Map.of("node", "node-3", "service", "mapreduce");
            assertEquals(0, scrape.value("rdmashuffle_service_up", here));
            long code = valueOf(s.metrics(), RdmaShuffleService.METRICS_SOURCE, "UnavailableCode");
            Trouble trouble = Trouble.in(why).orElseThrow(() -> new AssertionError("no RS code names " + why));
            assertEquals(Long.parseLong(trouble.code().substring(2)), code, why);
            assertEquals(1, scrape.value("rdmashuffle_service_unavailable_info", Map.of("node", "node-3", "service", "mapreduce",
                    "code", trouble.code(), "reason", trouble.key())), scrape.text());
            assertEquals(List.of(), scrape.find("rdmashuffle_served_requests_total", here), "no figures of an engine that is not there");
            assertEquals(0, Promtool.run(dir, scrape.text(), "check", "metrics").exit(), scrape.text());
        } finally {
            s.stop();
        }
    }

    /**
     * A tenant naming application after application (authentication off, as on a trusted network, where a
     * reducer may name any): the per-application series are the engine's tenants, so they stop growing
     * where the node stops admitting applications (its completion queue full: receive buffers made large
     * here so that a few fill it), and an application stopped takes its series along.
     */
    @Test
    void perApplicationSeries_stopWhereTheNodeStopsAdmittingApplications_andGoWithTheirApplication() throws Exception {
        Configuration conf = engineSettings(new JobConf(false));
        conf.set(HadoopKeys.PROMETHEUS_PORT, "0");
        conf.setBoolean(HadoopSettings.SERVICE_AUTHENTICATE, false);
        conf.set(HadoopSettings.PREFIX + EngineConfig.KEY_RECEIVE_BUFFERS, "10000");
        conf.set(HadoopSettings.PREFIX + EngineConfig.KEY_RECEIVE_BUFFER_SIZE, "4k");
        conf.set(HadoopSettings.PREFIX + EngineConfig.KEY_SEND_BUFFERS, "2");
        RdmaShuffleService s = mapReduceService(conf);
        try {
            assertNull(s.unavailable());
            List<String> admitted = new java.util.ArrayList<>();
            List<String> refused = new java.util.ArrayList<>();
            int asked = 8;
            for (int i = 1; i <= asked; i++) {
                String app = ApplicationId.newInstance(1_700_000_000_000L, 100 + i).toString();
                try (TestReducer r = new TestReducer(app, null)) {
                    TestReducer.Result got = r.fetch(s.rdmaAddress(), MapReduceIds.mapAttempt(MapReduceIds.jobOf(app), 0), 0);
                    assertNotNull(got.failure(), "no output was written");
                    (String.valueOf(got.failure().getMessage()).contains("as many applications as it may") ? refused : admitted)
                            .add(app);
                }
            }
            assertTrue(!admitted.isEmpty() && !refused.isEmpty(), "admitted " + admitted + ", refused " + refused);
            Scrape scrape = Scrape.of(s.prometheus().address());
            assertEquals(new java.util.TreeSet<>(admitted), applications(scrape), "per-application series:\n" + scrape.text());
            assertEquals(admitted.size(), scrape.value("rdmashuffle_applications", Map.of("service", "mapreduce")));

            s.stopApplication(new org.apache.hadoop.yarn.server.api.ApplicationTerminationContext(
                    ApplicationId.fromString(admitted.get(0))));
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (applications(Scrape.of(s.prometheus().address())).contains(admitted.get(0)) && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertEquals(new java.util.TreeSet<>(admitted.subList(1, admitted.size())), applications(Scrape.of(s.prometheus().address())),
                    "after " + admitted.get(0) + " stopped");
        } finally {
            s.stop();
        }
    }

    private static java.util.Set<String> applications(Scrape scrape) {
        java.util.Set<String> apps = new java.util.TreeSet<>();
        scrape.samples().forEach(x -> {
            if (x.labels().containsKey("application")) {
                apps.add(x.labels().get("application"));
            }
        });
        return apps;
    }

    private static long valueOf(org.apache.hadoop.metrics2.MetricsSource source, String record, String metric) {
        MetricsCollectorImpl c = new MetricsCollectorImpl();
        source.getMetrics(c, true);
        for (MetricsRecord r : c.getRecords()) {
            if (r.name().equals(record)) {
                for (var m : r.metrics()) {
                    if (m.name().equals(metric)) {
                        return m.value().longValue();
                    }
                }
            }
        }
        throw new AssertionError("no " + metric + " in " + record);
    }
}
