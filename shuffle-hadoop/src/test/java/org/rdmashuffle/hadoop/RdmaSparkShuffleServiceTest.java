package org.rdmashuffle.hadoop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.server.api.ApplicationInitializationContext;
import org.apache.hadoop.yarn.server.api.ApplicationTerminationContext;
import org.apache.hadoop.yarn.server.api.AuxiliaryService;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.protocol.BlockId;

/**
 * The {@code spark_shuffle} auxiliary service: Spark's own service (a stand-in here: Spark's YARN jar
 * is not on Maven Central's mirror this build reaches) gets every NodeManager call unchanged, and the
 * RDMA half serves the Spark applications' outputs found under the NodeManager's local dirs, to
 * reducers holding the secret the NodeManager was handed, until the application stops — and again
 * after a NodeManager restart.
 */
class RdmaSparkShuffleServiceTest {
    private static final ApplicationId APP = ApplicationId.newInstance(1_700_000_000_000L, 1);
    private static final byte[] SECRET = "spark-app-secret-0123456789abcdef".getBytes(StandardCharsets.UTF_8);

    @TempDir
    Path dir;

    /** Stands in for org.apache.spark.network.yarn.YarnShuffleService: records what the NodeManager told it. */
    static final class SparkServiceStandIn extends AuxiliaryService {
        final List<String> calls = new ArrayList<>();

        SparkServiceStandIn() {
            super("spark_shuffle");
        }

        @Override
        protected void serviceInit(Configuration conf) {
            calls.add("init");
        }

        @Override
        protected void serviceStart() {
            calls.add("start");
        }

        @Override
        protected void serviceStop() {
            calls.add("stop");
        }

        @Override
        public void initializeApplication(ApplicationInitializationContext c) {
            calls.add("initializeApplication " + c.getApplicationId() + " " + c.getApplicationDataForService().remaining());
        }

        @Override
        public void stopApplication(ApplicationTerminationContext c) {
            calls.add("stopApplication " + c.getApplicationId());
        }

        @Override
        public ByteBuffer getMetaData() {
            return ByteBuffer.wrap(new byte[] {0, 0, 0x1c, (byte) 0xa9}); // Spark's: its port, 7337
        }
    }

    /** What an executor of {@link #APP} run by alice leaves: map 5 of shuffle 0, three partitions. */
    private byte[] writeSparkOutput(Path nmLocalDir) throws IOException {
        Path sub = Files.createDirectories(nmLocalDir.resolve("usercache/alice/appcache/" + APP + "/blockmgr-1234/0d"));
        byte[] data = new byte[3000];
        new Random(5).nextBytes(data);
        Files.write(sub.resolve("shuffle_0_5_0.data"), data);
        ByteArrayOutputStream index = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(index)) {
            for (long o : new long[] {0, 1000, 1700, 3000}) {
                out.writeLong(o);
            }
        }
        Files.write(sub.resolve("shuffle_0_5_0.index"), index.toByteArray());
        return data;
    }

    private RdmaSparkShuffleService start(SparkServiceStandIn spark, Path nmLocalDir) {
        Configuration conf = new Configuration(false);
        conf.set("rdma.shuffle.provider", "software");
        conf.set(HadoopSettings.SERVICE_BIND_ADDRESS, "127.0.0.1");
        conf.setInt(HadoopKeys.SPARK_SERVICE_PORT, 0);
        conf.set("rdma.shuffle.fetchBufferMemory", "16m");
        RdmaSparkShuffleService service = new RdmaSparkShuffleService(spark);
        service.setRecoveryPath(new org.apache.hadoop.fs.Path(dir.resolve("recovery").toString()));
        service.setAuxiliaryLocalPathHandler(new FakeLocalDirs(dir.resolve("nm-local-0"), nmLocalDir));
        service.init(conf);
        service.start();
        return service;
    }

    @Test
    void aSparkApplication_isServedOverRdmaWithItsSecret_untilItStops() throws Exception {
        Path nmLocal = dir.resolve("nm-local-1");
        byte[] data = writeSparkOutput(nmLocal);
        SparkServiceStandIn spark = new SparkServiceStandIn();
        RdmaSparkShuffleService service = start(spark, nmLocal);
        try {
            service.initializeApplication(new ApplicationInitializationContext("alice", APP, ByteBuffer.wrap(SECRET)));
            try (TestReducer reducer = new TestReducer(APP.toString(), SECRET);
                 TestReducer guesser = new TestReducer(APP.toString(), "a-guessed-secret-0123456789abcdef".getBytes())) {
                TestReducer.Result r = reducer.fetch(service.rdmaAddress(), BlockId.of(0, 5, 1));
                assertNull(r.failure());
                assertArrayEquals(java.util.Arrays.copyOfRange(data, 1000, 1700), r.bytes());
                assertTrue(guesser.fetch(service.rdmaAddress(), BlockId.of(0, 5, 1)).refused(), "a wrong secret was served");
                assertEquals(1, ((SparkServing) service.engine()).server().outputsResolved());
            }
            assertArrayEquals(spark.getMetaData().array(), service.getMetaData().array(), "Spark's metadata, as Spark gives it");

            service.stopApplication(new ApplicationTerminationContext(APP));
            try (TestReducer reducer = new TestReducer(APP.toString(), SECRET)) {
                assertTrue(reducer.fetch(service.rdmaAddress(), BlockId.of(0, 5, 1)).refused(), "a stopped application was served");
            }
        } finally {
            service.stop();
        }
        assertEquals(List.of("init", "start", "initializeApplication " + APP + " " + SECRET.length, "stopApplication " + APP,
                "stop"), spark.calls);
    }

    @Test
    void anApplicationWithoutASecret_isLeftToSparksHalf() throws Exception {
        Path nmLocal = dir.resolve("nm-local-1");
        writeSparkOutput(nmLocal);
        SparkServiceStandIn spark = new SparkServiceStandIn();
        RdmaSparkShuffleService service = start(spark, nmLocal);
        try {
            // spark.authenticate=false: Spark hands the service an empty buffer.
            service.initializeApplication(new ApplicationInitializationContext("alice", APP, ByteBuffer.allocate(0)));
            assertTrue(spark.calls.contains("initializeApplication " + APP + " 0"), spark.calls.toString());
            assertFalse(((SparkServing) service.engine()).server().serves(APP.toString()));
            try (TestReducer reducer = new TestReducer(APP.toString(), SECRET)) {
                assertTrue(reducer.fetch(service.rdmaAddress(), BlockId.of(0, 5, 0)).refused(), "served without a secret");
            }
        } finally {
            service.stop();
        }
    }

    @Test
    void afterANodeManagerRestart_runningApplicationsAreServedAgain() throws Exception {
        Path nmLocal = dir.resolve("nm-local-1");
        byte[] data = writeSparkOutput(nmLocal);
        RdmaSparkShuffleService before = start(new SparkServiceStandIn(), nmLocal);
        try {
            before.initializeApplication(new ApplicationInitializationContext("alice", APP, ByteBuffer.wrap(SECRET)));
        } finally {
            before.stop(); // the NodeManager goes down; the application keeps running
        }
        Path record = dir.resolve("recovery").resolve(SparkServing.RECOVERY_DIR).resolve(APP.toString());
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(record)));

        SparkServiceStandIn spark = new SparkServiceStandIn();
        RdmaSparkShuffleService after = start(spark, nmLocal);
        try {
            try (TestReducer reducer = new TestReducer(APP.toString(), SECRET)) {
                TestReducer.Result r = reducer.fetch(after.rdmaAddress(), BlockId.of(0, 5, 2));
                assertNull(r.failure());
                assertArrayEquals(java.util.Arrays.copyOfRange(data, 1700, 3000), r.bytes());
            }
            after.stopApplication(new ApplicationTerminationContext(APP));
            assertFalse(Files.exists(record), "the record of a stopped application stays");
        } finally {
            after.stop();
        }
    }

    /**
     * The recovery path's disk full (issue 52, item 5): the application's record cannot be written
     * ({@code ENOSPC}); the application is served all the same, the service stays up, and no partial
     * record (a {@code .tmp} holding part of the secret) is left there, then or after a restart.
     */
    @Test
    void aRecoveryPathWhoseDiskIsFull_leavesNoPartialRecord_andTheApplicationIsStillServed() throws Exception {
        Path nmLocal = dir.resolve("nm-local-1");
        byte[] data = writeSparkOutput(nmLocal);
        try (org.rdmashuffle.core.testing.SmallFilesystem disk = org.rdmashuffle.core.testing.SmallFilesystem.mount(
                dir.resolve("recovery"), 1L << 20)) {
            Path records = Files.createDirectories(disk.root().resolve(SparkServing.RECOVERY_DIR));
            disk.fillLeaving(0);
            RdmaSparkShuffleService service = start(new SparkServiceStandIn(), nmLocal);
            try {
                service.initializeApplication(new ApplicationInitializationContext("alice", APP, ByteBuffer.wrap(SECRET)));
                assertEquals(List.of(), disk.files(),
                        "what the write that ran out of space left in " + records);
                try (TestReducer reducer = new TestReducer(APP.toString(), SECRET)) {
                    TestReducer.Result r = reducer.fetch(service.rdmaAddress(), BlockId.of(0, 5, 1));
                    assertNull(r.failure(), "an application whose record could not be written is served: " + r.failure());
                    assertArrayEquals(java.util.Arrays.copyOfRange(data, 1000, 1700), r.bytes());
                }
                service.stopApplication(new ApplicationTerminationContext(APP));
            } finally {
                service.stop();
            }
            // A record a NodeManager's end cut short (its .tmp) is removed at the next start.
            Files.write(records.resolve(APP + ".tmp"), new byte[0]);
            RdmaSparkShuffleService restarted = start(new SparkServiceStandIn(), nmLocal);
            restarted.stop();
            assertEquals(List.of(), disk.files(), "left under the recovery path after a restart");
        }
    }

    /**
     * The RDMA port taken: the service starts anyway (the NodeManager stays up), Spark's half serves
     * every application as it would alone, and the reason names the port and its key, in the service
     * and in its metrics.
     */
    @Test
    void aPortTakenByAnotherService_leavesSparksHalfServingAndSaysWhy() throws Exception {
        try (java.net.ServerSocket other = new java.net.ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            Configuration conf = new Configuration(false);
            conf.set("rdma.shuffle.provider", "software");
            conf.set(HadoopSettings.SERVICE_BIND_ADDRESS, "127.0.0.1");
            conf.setInt(HadoopKeys.SPARK_SERVICE_PORT, other.getLocalPort());
            SparkServiceStandIn spark = new SparkServiceStandIn();
            RdmaSparkShuffleService service = new RdmaSparkShuffleService(spark);
            service.setAuxiliaryLocalPathHandler(new FakeLocalDirs(dir.resolve("nm-local-0"), dir.resolve("nm-local-1")));
            service.init(conf);
            service.start();
            try {
                String why = String.valueOf(service.unavailable());
                assertTrue(why.contains("127.0.0.1:" + other.getLocalPort()) && why.contains(HadoopKeys.SPARK_SERVICE_PORT), why);
                assertNull(service.engine());
                service.initializeApplication(new ApplicationInitializationContext("alice", APP, ByteBuffer.wrap(SECRET)));
                assertEquals(7337, service.getMetaData().getInt(), "Spark's half answers for its port");
                service.stopApplication(new ApplicationTerminationContext(APP));
                assertEquals(List.of("init", "start", "initializeApplication " + APP + " " + SECRET.length,
                        "stopApplication " + APP), spark.calls);
                org.apache.hadoop.metrics2.impl.MetricsCollectorImpl collector = new org.apache.hadoop.metrics2.impl.MetricsCollectorImpl();
                service.metrics().getMetrics(collector, true);
                var record = collector.getRecords().get(0);
                assertEquals(RdmaSparkShuffleService.METRICS_SOURCE, record.name());
                long running = -1;
                for (var m : record.metrics()) {
                    if (m.name().equals("EngineRunning")) {
                        running = m.value().longValue();
                    }
                }
                assertEquals(0, running, "EngineRunning");
                assertTrue(record.tags().stream().anyMatch(t -> t.name().equals("Reason") && t.value().equals(why)),
                        record.tags().toString());
            } finally {
                service.stop();
            }
            assertEquals("stop", spark.calls.get(spark.calls.size() - 1));
        }
    }

    @Test
    void withoutSparksYarnJar_theNodeManagerIsToldWhichJarIsMissing() {
        IllegalStateException e = assertThrows(IllegalStateException.class, RdmaSparkShuffleService::new);
        assertTrue(e.getMessage().contains("yarn-shuffle.jar") && e.getMessage().contains(RdmaSparkShuffleService.SPARK_SERVICE_CLASS),
                e.getMessage());
    }
}
