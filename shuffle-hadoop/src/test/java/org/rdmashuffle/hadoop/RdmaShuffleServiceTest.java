package org.rdmashuffle.hadoop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;

import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.IndexRecord;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.ShuffleHandler;
import org.apache.hadoop.mapred.SpillRecord;
import org.apache.hadoop.mapreduce.JobID;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.security.token.JobTokenIdentifier;
import org.apache.hadoop.metrics2.MetricsRecord;
import org.apache.hadoop.metrics2.impl.MetricsCollectorImpl;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.server.api.ApplicationInitializationContext;
import org.apache.hadoop.yarn.server.api.ApplicationTerminationContext;
import org.apache.hadoop.yarn.server.api.AuxiliaryLocalPathHandler;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.rdmashuffle.core.client.BlockFetchException;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.config.EngineConfig;

/**
 * The service as the NodeManager drives it, without a cluster: a job's secret arrives with the
 * application, its map outputs are found where map tasks leave them, and a reducer holding the secret
 * reads them; nobody else does, and nothing is left after the application stops.
 */
class RdmaShuffleServiceTest {
    private static final String USER = "alice";

    @TempDir
    Path localDir;
    @TempDir
    Path recoveryDir;
    private RdmaShuffleService service;
    private final ApplicationId app = ApplicationId.newInstance(1_700_000_000_000L, 7);
    private final JobID job = MapReduceIds.jobOf(app.toString());
    private byte[] jobSecret;
    private Token<JobTokenIdentifier> jobToken;

    @BeforeEach
    void startService() throws Exception {
        service = newService();
        // MapReduce's shuffle secret: 64 random bits by default, as the job's token password.
        byte[] shuffleSecret = new byte[8];
        new java.security.SecureRandom().nextBytes(shuffleSecret);
        jobToken = new Token<>(new JobTokenIdentifier(new Text(job.toString())).getBytes(),
                shuffleSecret, JobTokenIdentifier.KIND_NAME, new Text("localhost:0"));
        jobSecret = MapReduceIds.engineSecret(shuffleSecret);
        service.initializeApplication(new ApplicationInitializationContext(USER, app,
                ShuffleHandler.serializeServiceData(jobToken)));
    }

    /** The service as a NodeManager with recovery enabled starts it: same local dir, same recovery path. */
    /** The service started again with {@code conf} and its Prometheus exposition on a free loopback port, serving {@code app}. */
    private void restartWithExposition(JobConf conf) throws Exception {
        service.stop();
        conf.set(HadoopKeys.PROMETHEUS_PORT, "0");
        conf.set(HadoopKeys.PROMETHEUS_BIND_ADDRESS, "127.0.0.1");
        service = newService(conf);
        service.initializeApplication(new ApplicationInitializationContext(USER, app, ShuffleHandler.serializeServiceData(jobToken)));
    }

    private RdmaShuffleService newService() {
        return newService(new JobConf(false));
    }

    private RdmaShuffleService newService(JobConf conf) {
        return newService(conf, true);
    }

    /** @param handlerGiven whether the NodeManager hands the service its local path handler (not through a class path of its own) */
    private RdmaShuffleService newService(JobConf conf, boolean handlerGiven) {
        conf.setInt(ShuffleHandler.SHUFFLE_PORT_CONFIG_KEY, 0);
        conf.setInt(HadoopSettings.SERVICE_PORT, 0);
        conf.set(HadoopSettings.SERVICE_BIND_ADDRESS, "127.0.0.1");
        conf.set(HadoopSettings.PREFIX + EngineConfig.KEY_PROVIDER, "software");
        conf.setBoolean(org.apache.hadoop.yarn.conf.YarnConfiguration.NM_RECOVERY_ENABLED, true);
        RdmaShuffleService s = new RdmaShuffleService();
        if (handlerGiven) {
            s.setAuxiliaryLocalPathHandler(new OneLocalDir(localDir));
        }
        s.setRecoveryPath(new org.apache.hadoop.fs.Path(recoveryDir.toString()));
        s.init(conf);
        s.start();
        return s;
    }

    @AfterEach
    void stopService() {
        service.stop();
    }

    @Test
    void aReducerWithTheJobsSecret_readsEachPartitionAndItsRawLength() throws Exception {
        MapOutput out = writeMapOutput(0, 0, new int[] {3000, 0, 70_000, 12});
        try (TestReducer r = new TestReducer(app.toString(), jobSecret)) {
            for (int p = 0; p < 4; p++) {
                TestReducer.Result got = r.fetch(service.rdmaAddress(), out.attempt, p);
                assertTrue(got.failure() == null, "partition " + p + ": " + got.failure());
                assertArrayEquals(out.partition(p), got.bytes(), "partition " + p);
                assertEquals(p == 1 ? 0 : out.raw[p], got.rawLength(), "raw length of partition " + p);
            }
        }
        MetricsCollectorImpl collector = new MetricsCollectorImpl();
        service.metrics().getMetrics(collector, true);
        MetricsRecord record = collector.getRecords().get(0);
        assertEquals(RdmaShuffleService.METRICS_SOURCE, record.name());
        long registered = 0;
        for (var m : record.metrics()) {
            if (m.name().equals("RegisteredMapOutputBytes")) {
                registered = m.value().longValue();
            }
        }
        assertEquals((out.size + 4095) / 4096 * 4096, registered, "the map output is registered as one region (whole pages)");
    }

    /**
     * The NodeManager's metrics2 source: node totals and a record per application (tagged {@code
     * Application}) of the blocks and bytes described to reducers, and refusals by kind.
     */
    @Test
    void servedBlocksAndRefusals_areInTheNodesRecordAndTheApplicationsOwn() throws Exception {
        MapOutput out = writeMapOutput(0, 0, new int[] {3000, 0, 70_000, 12});
        try (TestReducer r = new TestReducer(app.toString(), jobSecret)) {
            for (int p = 0; p < 4; p++) {
                assertTrue(r.fetch(service.rdmaAddress(), out.attempt, p).failure() == null, "partition " + p);
            }
            assertTrue(r.fetch(service.rdmaAddress(), out.attempt, 9).failure() != null, "partition 9 of 4 is refused");
        }
        MetricsCollectorImpl collector = new MetricsCollectorImpl();
        service.metrics().getMetrics(collector, true);
        java.util.Map<String, Long> node = values(collector.getRecords().get(0));
        assertEquals(4L, node.get("ServedBlocks"), node.toString());
        assertEquals(out.size, node.get("ServedBytes"), node.toString());
        assertEquals(1L, node.get("RefusedPartitionRange"), node.toString());
        assertEquals(1L, node.get("RefusedRequests"), node.toString());
        assertEquals(1L, node.get("Registrations"), node.toString());
        assertEquals(0L, node.get("RegistrationEvictions"), "published, and nothing was evicted: " + node);
        assertEquals(0L, node.get("CompletionErrors"), node.toString());
        MetricsRecord perApp = collector.getRecords().stream()
                .filter(x -> x.name().equals(RdmaShuffleService.METRICS_SOURCE + "Application")).findFirst().orElseThrow();
        assertEquals(app.toString(), perApp.tags().stream().filter(t -> t.name().equals("Application")).findFirst()
                .orElseThrow().value());
        java.util.Map<String, Long> mine = values(perApp);
        assertEquals(4L, mine.get("ServedBlocks"), mine.toString());
        assertEquals(out.size, mine.get("ServedBytes"), mine.toString());
        assertEquals(1L, mine.get("RefusedPartitionRange"), mine.toString());
    }

    /**
     * Every metric the dashboard's NodeManager panels query (the panels after its "NodeManagers" row) is
     * in a real scrape of the node's exposition (NodePrometheusExporter) while an application is served;
     * the Spark ones are checked against a real scrape of the driver (MetricsPluginTest).
     */
    @Test
    void theDashboardsNodeManagerQueries_nameMetricsTheNodesExpositionServes() throws Exception {
        restartWithExposition(new JobConf(false));
        MapOutput out = writeMapOutput(0, 0, new int[] {3000, 0, 70_000, 12});
        try (TestReducer r = new TestReducer(app.toString(), jobSecret)) {
            assertTrue(r.fetch(service.rdmaAddress(), out.attempt, 0).failure() == null);
        }
        java.net.InetSocketAddress at = service.prometheus().address();
        assertTrue(at != null, "the exposition serves: " + service.prometheus().why());
        java.util.Set<String> scraped = new java.util.TreeSet<>();
        Scrape.of(at).samples().forEach(x -> scraped.add(x.name()));

        com.fasterxml.jackson.databind.JsonNode panels = new com.fasterxml.jackson.databind.ObjectMapper()
                .readTree(Files.readString(Path.of("../conf/grafana/rdma-shuffle-dashboard.json"))).get("panels");
        java.util.Set<String> queried = new java.util.TreeSet<>();
        boolean nodeManagers = false;
        for (com.fasterxml.jackson.databind.JsonNode panel : panels) {
            if (panel.get("type").asText().equals("row")) {
                nodeManagers = panel.get("title").asText().startsWith("NodeManagers");
                continue;
            }
            if (nodeManagers) {
                for (com.fasterxml.jackson.databind.JsonNode target : panel.get("targets")) {
                    java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\b(rdmashuffle_[a-z0-9_]+)\\b")
                            .matcher(target.get("expr").asText());
                    while (m.find()) {
                        queried.add(m.group(1));
                    }
                }
            }
        }
        assertTrue(queried.size() >= 8, "the dashboard's NodeManager panels query " + queried);
        // Served only while a service's engine is unavailable: NodePrometheusExporterTest scrapes one such node.
        assertTrue(queried.remove("rdmashuffle_service_unavailable_info"), "the dashboard shows why an engine did not start");
        queried.removeAll(scraped);
        assertEquals(java.util.Set.of(), queried, "metrics the dashboard's NodeManager panels query that the node's exposition "
                + "does not serve: " + scraped);
    }

    /**
     * The node's Prometheus exposition (NodePrometheusExporter), scraped over HTTP after a real serve: every
     * figure equals the service's metrics2 record it comes from, under the names and labels of
     * docs/metrics.md (application, kind, status, errno as labels; the software provider named as such, never
     * as a device); promtool, Prometheus' own parser, finds nothing wrong with it; and once the application
     * stops, no series names it.
     */
    @Test
    void thePrometheusExposition_givesTheMetrics2Figures_labelled_andForgetsAStoppedApplication() throws Exception {
        JobConf conf = new JobConf(false);
        conf.set(HadoopKeys.NODE_MANAGER_HOSTNAME, "node-7");
        conf.set(HadoopSettings.PREFIX + EngineConfig.KEY_REGISTERED_MEMORY_LIMIT, "3g");
        restartWithExposition(conf);
        java.net.InetSocketAddress at = service.prometheus().address();
        assertTrue(at != null, "the exposition serves: " + service.prometheus().why());
        MapOutput out = writeMapOutput(0, 0, new int[] {3000, 0, 70_000, 12});
        try (TestReducer r = new TestReducer(app.toString(), jobSecret)) {
            for (int p = 0; p < 4; p++) {
                assertTrue(r.fetch(service.rdmaAddress(), out.attempt, p).failure() == null, "partition " + p);
            }
            assertTrue(r.fetch(service.rdmaAddress(), out.attempt, 9).failure() != null, "partition 9 of 4 is refused");
        }
        MetricsCollectorImpl collector = new MetricsCollectorImpl();
        service.metrics().getMetrics(collector, true);
        java.util.Map<String, Long> node = values(collector.getRecords().get(0));
        java.util.Map<String, Long> mine = values(collector.getRecords().stream()
                .filter(x -> x.name().equals(RdmaShuffleService.METRICS_SOURCE + "Application")).findFirst().orElseThrow());
        Scrape scrape = Scrape.of(at);

        java.util.Map<String, String> here = java.util.Map.of("node", "node-7", "service", "mapreduce");
        assertEquals(1, scrape.value("rdmashuffle_service_up", java.util.Map.of("node", "node-7", "service", "mapreduce",
                "carrier", "software_provider", "provider", "software", "device", "soft0", "device_kind", "software")),
                "the software provider serves, and says so\n" + scrape.text());
        assertEquals(List.of(), scrape.find("rdmashuffle_service_up", java.util.Map.of("carrier", "rdma_device")),
                "the software provider is not a device");
        assertEquals(List.of(), scrape.find("rdmashuffle_service_unavailable_info", here), "nothing unavailable");
        int compared = 0;
        for (var e : NodeExposition.NODE_GAUGES.entrySet()) {
            assertEquals((double) node.get(e.getKey()), scrape.value(e.getValue()[0], here), e.getKey());
            compared++;
        }
        for (var e : NodeExposition.NODE_COUNTERS.entrySet()) {
            assertEquals((double) node.get(e.getKey()), scrape.value(e.getValue()[0] + "_total", here), e.getKey());
            compared++;
        }
        for (var e : node.entrySet()) {
            if (e.getKey().startsWith("CompletionErrors") && e.getKey().length() > "CompletionErrors".length()) {
                assertEquals((double) e.getValue(), scrape.value("rdmashuffle_completion_errors_total", java.util.Map.of(
                        "node", "node-7", "service", "mapreduce", "status", e.getKey().substring("CompletionErrors".length()))));
                compared++;
            }
        }
        java.util.Map<String, String> ofApp = java.util.Map.of("node", "node-7", "service", "mapreduce", "application",
                app.toString());
        for (var e : NodeExposition.APPLICATION_COUNTERS.entrySet()) {
            assertEquals((double) mine.get(e.getKey()), scrape.value(e.getValue()[0] + "_total", ofApp), e.getKey());
            compared++;
        }
        for (var e : mine.entrySet()) {
            if (e.getKey().startsWith("Refused") && !e.getKey().equals("RefusedRequests")) {
                String kind = Character.toLowerCase(e.getKey().charAt(7)) + e.getKey().substring(8);
                java.util.Map<String, String> labels = new java.util.HashMap<>(ofApp);
                labels.put("kind", kind);
                assertEquals((double) e.getValue(), scrape.value("rdmashuffle_refused_requests_total", labels), kind);
                compared++;
            }
        }
        assertTrue(compared >= 6 + 2 + 3 + 12, "figures compared: " + compared);
        // And against what happened, not only against metrics2.
        assertEquals(4, scrape.value("rdmashuffle_served_blocks_total", ofApp));
        assertEquals(out.size, scrape.value("rdmashuffle_served_bytes_total", ofApp));
        java.util.Map<String, String> partitionRange = new java.util.HashMap<>(ofApp);
        partitionRange.put("kind", "partitionRange");
        assertEquals(1, scrape.value("rdmashuffle_refused_requests_total", partitionRange));
        assertEquals((out.size + 4095) / 4096 * 4096, scrape.value("rdmashuffle_registered_bytes", here));
        assertEquals(3L << 30, scrape.value("rdmashuffle_registered_limit_bytes", here));
        assertEquals(1, scrape.value("rdmashuffle_applications", here));
        assertTrue(scrape.samples().stream().noneMatch(x -> x.name().contains(Long.toString(app.getClusterTimestamp()))),
                "no application id in a name");

        Promtool.Result lint = Promtool.run(localDir, scrape.text(), "check", "metrics");
        assertEquals(0, lint.exit(), "promtool check metrics:\n" + lint.output() + "\n" + scrape.text());

        service.stopApplication(new ApplicationTerminationContext(app));
        long deadline = System.nanoTime() + 10_000_000_000L;
        Scrape after = Scrape.of(at);
        while (!after.find("rdmashuffle_served_blocks_total", java.util.Map.of("application", app.toString())).isEmpty()
                && System.nanoTime() < deadline) {
            Thread.sleep(20);
            after = Scrape.of(at);
        }
        assertEquals(List.of(), after.samples().stream().filter(x -> x.labels().containsValue(app.toString())).toList(),
                "series of a stopped application");
        assertEquals(0, after.value("rdmashuffle_applications", here));
        assertEquals(1, after.value("rdmashuffle_registrations_total", here), "node totals outlive the application");
    }

    private static java.util.Map<String, Long> values(MetricsRecord record) {
        java.util.Map<String, Long> m = new java.util.TreeMap<>();
        for (var x : record.metrics()) {
            m.put(x.name(), x.value().longValue());
        }
        return m;
    }

    /**
     * Hadoop 3.5 loads a service named with {@code aux-services.<name>.classpath} (as conf/yarn-site.xml
     * ships it) in a wrapper that never passes the local path handler on: the service must find map
     * outputs in the node's configured local dirs, over RDMA and over the stock HTTP alike.
     */
    @Test
    void aServiceGivenNoLocalPathHandler_findsOutputsInTheNodesConfiguredLocalDirs() throws Exception {
        service.stop();
        JobConf conf = new JobConf(false);
        conf.set(org.apache.hadoop.yarn.conf.YarnConfiguration.NM_LOCAL_DIRS, localDir.toString());
        service = newService(conf, false);
        service.initializeApplication(new ApplicationInitializationContext(USER, app,
                ShuffleHandler.serializeServiceData(jobToken)));
        MapOutput out = writeMapOutput(1, 0, new int[] {500, 700});
        try (TestReducer r = new TestReducer(app.toString(), jobSecret)) {
            TestReducer.Result got = r.fetch(service.rdmaAddress(), out.attempt, 1);
            assertTrue(got.failure() == null, String.valueOf(got.failure()));
            assertArrayEquals(out.partition(1), got.bytes());
        }
        assertTrue(service.getAuxiliaryLocalPathHandler().getLocalPathForRead(
                "usercache/" + USER + "/appcache/" + app + "/output/" + out.attempt() + "/file.out.index").toString()
                .startsWith(localDir.toString()), "the stock handler's HTTP side resolves the same index");
    }

    /** A service whose RDMA port is taken (by another auxiliary service, or anything), as a NodeManager would start it. */
    private RdmaShuffleService serviceOnATakenPort(int takenPort, JobConf conf) {
        conf.setInt(ShuffleHandler.SHUFFLE_PORT_CONFIG_KEY, 0);
        conf.setInt(HadoopSettings.SERVICE_PORT, takenPort);
        conf.set(HadoopSettings.SERVICE_BIND_ADDRESS, "127.0.0.1");
        conf.set(HadoopSettings.PREFIX + EngineConfig.KEY_PROVIDER, "software");
        RdmaShuffleService s = new RdmaShuffleService();
        s.setAuxiliaryLocalPathHandler(new OneLocalDir(localDir));
        s.init(conf);
        return s;
    }

    /**
     * The RDMA port taken: the service starts anyway (the NodeManager stays up), the stock HTTP shuffle
     * listens, and the reason names the port and its key, in the service and in its metrics.
     */
    @Test
    void aPortTakenByAnotherService_leavesTheHttpShuffleServingAndSaysWhy() throws Exception {
        try (java.net.ServerSocket other = new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            RdmaShuffleService s = serviceOnATakenPort(other.getLocalPort(), new JobConf(false));
            try {
                s.start();
                String why = String.valueOf(s.unavailable());
                assertTrue(why.contains("127.0.0.1:" + other.getLocalPort()) && why.contains(HadoopSettings.SERVICE_PORT), why);
                int httpPort = ShuffleHandler.deserializeMetaData(s.getMetaData());
                try (java.net.Socket http = new java.net.Socket("127.0.0.1", httpPort)) {
                    assertTrue(http.isConnected(), "the stock HTTP shuffle listens on " + httpPort);
                }
                MetricsCollectorImpl collector = new MetricsCollectorImpl();
                s.metrics().getMetrics(collector, true);
                MetricsRecord record = collector.getRecords().get(0);
                long running = -1;
                long code = -1;
                for (var m : record.metrics()) {
                    if (m.name().equals("EngineRunning")) {
                        running = m.value().longValue();
                    } else if (m.name().equals("UnavailableCode")) {
                        code = m.value().longValue();
                    }
                }
                assertEquals(0, running, "EngineRunning");
                assertEquals(99, code, "UnavailableCode: no RS code names a taken port");
                assertTrue(record.tags().stream().anyMatch(t -> t.name().equals("Reason") && t.value().equals(why)),
                        record.tags().toString());
            } finally {
                s.stop();
            }
        }
    }

    /** A bad engine setting: the same, the reason naming the full key. */
    @Test
    void aBadSetting_leavesTheHttpShuffleServingAndNamesTheKey() throws Exception {
        JobConf conf = new JobConf(false);
        conf.set(HadoopSettings.PREFIX + EngineConfig.KEY_REGISTERED_MEMORY_LIMIT, "lots");
        RdmaShuffleService s = serviceOnATakenPort(0, conf);
        try {
            s.start();
            String why = String.valueOf(s.unavailable());
            assertTrue(why.contains(HadoopSettings.PREFIX + EngineConfig.KEY_REGISTERED_MEMORY_LIMIT) && why.contains("lots"), why);
            assertTrue(ShuffleHandler.deserializeMetaData(s.getMetaData()) > 0, "the stock HTTP shuffle has its port");
        } finally {
            s.stop();
        }
    }

    /** With rdma.shuffle.stopOnFailure, as Spark's service with spark.yarn.shuffle.stopOnFailure: the start fails, naming the port and the key. */
    @Test
    void withStopOnFailure_aPortTakenFailsTheStartNamingThePortAndTheKey() throws Exception {
        try (java.net.ServerSocket other = new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            JobConf conf = new JobConf(false);
            conf.setBoolean(HadoopSettings.STOP_ON_FAILURE, true);
            RdmaShuffleService s = serviceOnATakenPort(other.getLocalPort(), conf);
            Exception e = org.junit.jupiter.api.Assertions.assertThrows(Exception.class, s::start);
            String message = String.valueOf(e.getMessage()) + " / " + e.getCause();
            assertTrue(message.contains("127.0.0.1:" + other.getLocalPort()) && message.contains(HadoopSettings.SERVICE_PORT),
                    message);
            s.stop();
        }
    }

    @Test
    void aWrongSecret_isRefusedBeforeAnyOutputIsDescribed() throws Exception {
        writeMapOutput(0, 0, new int[] {100, 100});
        TaskAttemptID attempt = new TaskAttemptID(new org.apache.hadoop.mapreduce.TaskID(job,
                org.apache.hadoop.mapreduce.TaskType.MAP, 0), 0);
        try (TestReducer r = new TestReducer(app.toString(), MapReduceIds.engineSecret("not-the-job-secret".getBytes(
                StandardCharsets.UTF_8)))) {
            TestReducer.Result got = r.fetch(service.rdmaAddress(), attempt, 0);
            assertTrue(got.refused(), String.valueOf(got.failure()));
        }
        try (TestReducer r = new TestReducer(ApplicationId.newInstance(1, 1).toString(), jobSecret)) {
            TestReducer.Result got = r.fetch(service.rdmaAddress(), attempt, 0);
            assertTrue(got.refused(), "an application the node does not know: " + got.failure());
        }
        assertEquals(0, ((MapReduceServing) service.engine()).counters().servingConnections());
        assertEquals(0, ((MapReduceServing) service.engine()).counters().registeredMapOutputBytes());
    }

    @Test
    void afterANodeManagerRestart_theJobsReducersAreStillServed() throws Exception {
        MapOutput out = writeMapOutput(2, 0, new int[] {2000, 3000});
        service.stop();
        service = newService(); // no initializeApplication: the job's secret and user come from the recovery path
        try (TestReducer r = new TestReducer(app.toString(), jobSecret)) {
            TestReducer.Result got = r.fetch(service.rdmaAddress(), out.attempt, 1);
            assertTrue(got.failure() == null, String.valueOf(got.failure()));
            assertArrayEquals(out.partition(1), got.bytes());
        }
        service.stopApplication(new ApplicationTerminationContext(app));
        service.stop();
        service = newService(); // a stopped application stays forgotten
        try (TestReducer r = new TestReducer(app.toString(), jobSecret)) {
            assertTrue(r.fetch(service.rdmaAddress(), out.attempt, 1).refused(), "a stopped application's reducer after a restart");
        }
    }

    @Test
    void anIndexWhosePartitionsDoNotFollowEachOther_isRefusedByKind_andTheOutputIsNotRegistered() throws Exception {
        MapOutput out = writeMapOutput(4, 0, new int[] {1000, 1000});
        SpillRecord gap = new SpillRecord(2);
        gap.putIndex(new IndexRecord(0, 10, 900), 0);
        gap.putIndex(new IndexRecord(1000, 10, 1000), 1); // 100 bytes no partition owns
        gap.writeToFile(new org.apache.hadoop.fs.Path(out.dataFile.resolveSibling("file.out.index").toString()),
                new JobConf(false));
        try (TestReducer r = new TestReducer(app.toString(), jobSecret)) {
            TestReducer.Result got = r.fetch(service.rdmaAddress(), out.attempt, 1);
            // The reducer learns the block and the kind; the index's details (and its path) go to the node's log.
            assertTrue(got.failure() != null && got.failure().getMessage().contains("map output files unreadable or inconsistent")
                    && !got.failure().getMessage().contains("file.out"), String.valueOf(got.failure()));
            assertEquals(BlockFetchException.Kind.REFUSED, BlockFetchException.kindOf(got.failure()),
                    "the output is there but cannot be served by RDMA (HTTP may)");
        }
        assertEquals(0, ((MapReduceServing) service.engine()).counters().registeredMapOutputBytes());
    }

    /**
     * A NodeManager local dir that fills (issue 52, item 5): what map tasks finished before is served from
     * it as before; an output a map could not finish there ({@code ENOSPC}: its data cut short with no
     * index, or its index left empty) is refused by kind (re-run the map, or take HTTP), never registered,
     * and leaves no descriptor or mapping in the NodeManager; the service goes on serving.
     */
    @Test
    void aLocalDirThatFills_servesWhatWasWritten_refusesWhatWasCutShortByKind_andHoldsNothingOfIt() throws Exception {
        try (org.rdmashuffle.core.testing.SmallFilesystem disk = org.rdmashuffle.core.testing.SmallFilesystem.mount(localDir, 4L << 20)) {
            MapOutput written = writeMapOutput(1, 0, new int[] {3000, 0, 70_000, 12});
            MapOutput indexCutShort = writeMapOutput(3, 0, new int[] {1000, 1000});
            Path index3 = indexCutShort.dataFile.resolveSibling("file.out.index");
            Files.delete(index3);
            disk.fillLeaving(64 << 10);
            // Map 2's merge runs out of space in its data file; it never gets to its index.
            TaskAttemptID dataCutShort = new TaskAttemptID(new org.apache.hadoop.mapreduce.TaskID(job,
                    org.apache.hadoop.mapreduce.TaskType.MAP, 2), 0);
            Path data2 = Files.createDirectories(localDir.resolve("usercache/" + USER + "/appcache/" + app + "/output/"
                    + dataCutShort)).resolve("file.out");
            IOException full = org.junit.jupiter.api.Assertions.assertThrows(IOException.class, () -> {
                try (java.io.OutputStream out = Files.newOutputStream(data2)) {
                    byte[] chunk = new byte[16 << 10];
                    for (int i = 0; i < 64; i++) {
                        out.write(chunk);
                    }
                }
            });
            assertTrue(String.valueOf(full.getMessage()).contains("No space left on device"), String.valueOf(full));
            // Map 3's index write finds no room either (Hadoop's local file system throws an FSError, as in the
            // map task): the file is there, empty.
            SpillRecord index = new SpillRecord(2);
            index.putIndex(new IndexRecord(0, 3001, 1000), 0);
            index.putIndex(new IndexRecord(1000, 3001, 1000), 1);
            org.apache.hadoop.fs.FSError indexFull = org.junit.jupiter.api.Assertions.assertThrows(org.apache.hadoop.fs.FSError.class,
                    () -> index.writeToFile(new org.apache.hadoop.fs.Path(index3.toString()), new JobConf(false)));
            assertTrue(String.valueOf(indexFull.getMessage()).contains("No space left on device"), String.valueOf(indexFull));
            assertEquals(0, Files.size(index3), "the index the full disk cut short");

            MapReduceServing serving = (MapReduceServing) service.engine();
            try (TestReducer r = new TestReducer(app.toString(), jobSecret)) {
                TestReducer.Result got = r.fetch(service.rdmaAddress(), written.attempt, 2);
                assertTrue(got.failure() == null, "an output written before the disk filled: " + got.failure());
                assertArrayEquals(written.partition(2), got.bytes());

                TestReducer.Result noIndex = r.fetch(service.rdmaAddress(), dataCutShort, 0);
                assertTrue(noIndex.noSuchOutput(), "data cut short, no index: " + noIndex.failure());

                TestReducer.Result emptyIndex = r.fetch(service.rdmaAddress(), indexCutShort.attempt, 0);
                assertEquals(BlockFetchException.Kind.REFUSED, BlockFetchException.kindOf(emptyIndex.failure()),
                        "an empty index: " + emptyIndex.failure());
                assertTrue(emptyIndex.failure().getMessage().contains("map output files unreadable or inconsistent"),
                        String.valueOf(emptyIndex.failure()));

                TestReducer.Result again = r.fetch(service.rdmaAddress(), written.attempt, 0);
                assertTrue(again.failure() == null, "the service after the refusals: " + again.failure());
                assertArrayEquals(written.partition(0), again.bytes());
            }
            assertEquals(1, serving.mapOutputs(), "outputs the service knows: the one written, not those cut short");
            assertEquals((written.size + 4095) / 4096 * 4096, serving.counters().registeredMapOutputBytes(),
                    "registered: the one written, as one region");
            assertEquals(List.of(), heldUnder(localDir).stream().filter(l -> !l.contains(written.dataFile.toString())).toList(),
                    "descriptors and mappings of the NodeManager on the full disk, but the served output's");

            service.stopApplication(new ApplicationTerminationContext(app));
            long deadline = System.nanoTime() + 10_000_000_000L;
            while ((serving.counters().registeredMapOutputBytes() != 0 || !heldUnder(localDir).isEmpty())
                    && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertEquals(List.of(), heldUnder(localDir), "held on the full disk after the application stopped");
        }
    }

    /** This process's open descriptors and mappings of files under {@code dir}, one line each. */
    private static List<String> heldUnder(Path dir) throws IOException {
        String root = dir.toRealPath().toString();
        List<String> held = new java.util.ArrayList<>();
        for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
            if (line.contains(root + "/")) {
                held.add("mapped: " + line);
            }
        }
        try (var fds = Files.list(Path.of("/proc/self/fd"))) {
            for (Path fd : fds.toList()) {
                try {
                    String target = Files.readSymbolicLink(fd).toString();
                    if (target.startsWith(root + "/")) {
                        held.add("open: " + target);
                    }
                } catch (IOException closedMeanwhile) {
                    // the descriptor of the listing itself, or one closed while we looked
                }
            }
        }
        return held;
    }

    @Test
    void aReducerNamingNoMapReduceApplication_findsNothing() throws Exception {
        // Authentication off (a trusted network): the reducer names any application it likes.
        service.stop();
        JobConf conf = new JobConf(false);
        conf.setBoolean(HadoopSettings.SERVICE_AUTHENTICATE, false);
        service = newService(conf);
        writeMapOutput(0, 0, new int[] {100});
        try (TestReducer r = new TestReducer("not-an-application", null)) {
            TestReducer.Result got = r.fetch(service.rdmaAddress(), MapReduceIds.mapAttempt(job, 0), 0);
            assertTrue(got.failure() != null && got.failure().getMessage().contains("no such map output of this application"),
                    String.valueOf(got.failure()));
        }
    }

    @Test
    void aLostMapOutput_isRefusedByName() throws Exception {
        MapOutput out = writeMapOutput(3, 1, new int[] {500});
        Files.delete(out.dataFile);
        try (TestReducer r = new TestReducer(app.toString(), jobSecret)) {
            TestReducer.Result got = r.fetch(service.rdmaAddress(), out.attempt, 0);
            assertTrue(got.noSuchOutput() && got.failure().getMessage().contains("no such map output"),
                    String.valueOf(got.failure()));
        }
    }

    @Test
    void stoppingTheApplication_deregistersItsOutputsAndForgetsItsSecret() throws Exception {
        MapOutput out = writeMapOutput(1, 0, new int[] {4096, 4096});
        try (TestReducer r = new TestReducer(app.toString(), jobSecret)) {
            assertTrue(r.fetch(service.rdmaAddress(), out.attempt, 1).failure() == null);
        }
        assertEquals(out.size, ((MapReduceServing) service.engine()).counters().registeredMapOutputBytes());
        service.stopApplication(new ApplicationTerminationContext(app));
        // The stop returns at once; its regions are deregistered on the service's stopper thread.
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (((MapReduceServing) service.engine()).counters().registeredMapOutputBytes() != 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(0, ((MapReduceServing) service.engine()).counters().registeredMapOutputBytes());
        try (TestReducer r = new TestReducer(app.toString(), jobSecret)) {
            TestReducer.Result got = r.fetch(service.rdmaAddress(), out.attempt, 1);
            assertTrue(got.refused(), "a stopped application's reducer: " + got.failure());
        }
    }

    // ------------------------------------------------------------------ helpers

    private record MapOutput(TaskAttemptID attempt, Path dataFile, byte[] data, long[] offsets, long[] raw, long size) {
        byte[] partition(int p) {
            return java.util.Arrays.copyOfRange(data, (int) offsets[p], (int) offsets[p + 1]);
        }
    }

    /** A map output where a map task of the job leaves it: file.out and its checksummed index. */
    private MapOutput writeMapOutput(int task, int attemptNumber, int[] partitionBytes) throws IOException {
        TaskAttemptID attempt = new TaskAttemptID(new org.apache.hadoop.mapreduce.TaskID(job,
                org.apache.hadoop.mapreduce.TaskType.MAP, task), attemptNumber);
        Path dir = Files.createDirectories(localDir.resolve("usercache/" + USER + "/appcache/" + app + "/output/" + attempt));
        long[] offsets = new long[partitionBytes.length + 1];
        long[] raw = new long[partitionBytes.length];
        SpillRecord index = new SpillRecord(partitionBytes.length);
        for (int p = 0; p < partitionBytes.length; p++) {
            offsets[p + 1] = offsets[p] + partitionBytes[p];
            raw[p] = partitionBytes[p] * 3L + 1; // as if compressed
            index.putIndex(new IndexRecord(offsets[p], raw[p], partitionBytes[p]), p);
        }
        byte[] data = new byte[(int) offsets[partitionBytes.length]];
        new Random(task * 31L + attemptNumber).nextBytes(data);
        Path file = Files.write(dir.resolve("file.out"), data);
        index.writeToFile(new org.apache.hadoop.fs.Path(dir.resolve("file.out.index").toString()), new JobConf(false));
        return new MapOutput(attempt, file, data, offsets, raw, data.length);
    }

    /** The NodeManager's local-dir handler, over one directory. */
    private record OneLocalDir(Path root) implements AuxiliaryLocalPathHandler {
        @Override
        public org.apache.hadoop.fs.Path getLocalPathForRead(String path) throws IOException {
            Path p = root.resolve(path);
            if (!Files.exists(p)) {
                throw new org.apache.hadoop.util.DiskChecker.DiskErrorException("Could not find " + path);
            }
            return new org.apache.hadoop.fs.Path(p.toString());
        }

        @Override
        public org.apache.hadoop.fs.Path getLocalPathForWrite(String path) {
            return new org.apache.hadoop.fs.Path(root.resolve(path).toString());
        }

        @Override
        public org.apache.hadoop.fs.Path getLocalPathForWrite(String path, long size) {
            return getLocalPathForWrite(path);
        }

        @Override
        public Iterable<org.apache.hadoop.fs.Path> getAllLocalPathsForRead(String path) throws IOException {
            return List.of(getLocalPathForRead(path));
        }
    }
}
