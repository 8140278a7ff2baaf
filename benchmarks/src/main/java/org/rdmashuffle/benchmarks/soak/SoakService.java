package org.rdmashuffle.benchmarks.soak;

import java.io.IOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.stream.Stream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.server.api.ApplicationInitializationContext;
import org.apache.hadoop.yarn.server.api.ApplicationTerminationContext;
import org.apache.hadoop.yarn.server.api.AuxiliaryService;
import org.rdmashuffle.core.EngineCounters;
import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.service.SparkShuffleServer;

/**
 * The soak's service host: the NodeManager's RDMA service for Spark ({@code org.rdmashuffle.hadoop.RdmaSparkShuffleService},
 * the {@code spark_shuffle} auxiliary service) in a JVM of Hadoop 3.5's own jars and the project's
 * {@code -yarn} jar, as a NodeManager loads it: {@code init} with the node's yarn-site.xml, {@code
 * start}, and applications started and stopped through {@code initializeApplication} and {@code
 * stopApplication} as YARN's dispatcher calls them. It also plays YARN's part: it makes each
 * application's id and secret (the victim's once, of user alice; the attacker's anew every time the
 * attacker asks, of user mallory, the previous one stopped first and its directories deleted as the
 * NodeManager's deletion service does), and hands them over in files of mode 600.
 *
 * <p>Spark's own half of the service (its {@code YarnShuffleService}, TCP fetches and executor
 * registration) is a no-op stand-in here, handed in through the service's package-private constructor
 * as shuffle-hadoop's tests do: the soak is of the RDMA half. A sampler writes one line a second to
 * {@code service-samples.csv}: heap, direct memory, pinned bytes, mappings, descriptors, threads,
 * serving connections and tenants; at each phase's end (the phase file changes) it waits for the
 * attacker's application to be stopped and freed, calls {@link System#gc()} and writes that sample
 * as the phase's {@code end}.
 *
 * <pre>
 *   SoakService --run-dir DIR --yarn-site FILE
 * </pre>
 */
public final class SoakService {
    static final String SAMPLES = "service-samples.csv";
    static final String HEADER = "epoch_ms,phase,kind,heap_bytes,direct_bytes,direct_buffers,registered_bytes,pool_bytes,pinned_bytes,"
            + "mappings,descriptors,threads,serving_connections,queue_pairs,control_connections_open,tenants,stops_under_way,"
            + "attacker_apps";
    static final String SERVICE_CLASS = "org.rdmashuffle.hadoop.RdmaSparkShuffleService";
    static final String VICTIM_USER = "alice";
    static final String ATTACKER_USER = "mallory";

    private final Path runDir;
    private final Path control;
    private final Path samples;
    private final Path localDir;
    /** {@code org.rdmashuffle.hadoop.RdmaSparkShuffleService}, from the -yarn jar (not on this module's class path). */
    private final AuxiliaryService service;
    private final RdmaShuffleEngine engine;
    private final java.net.InetSocketAddress rdmaAddress;
    private final long poolBytesPerTenant;
    private final long clusterTimestamp = System.currentTimeMillis();
    private final SecureRandom random = new SecureRandom();
    private int nextAppId = 1;
    private org.apache.hadoop.yarn.api.records.ApplicationId attackerApp;
    private int attackerApps;
    private long attackerRequestsDone = 0;
    private volatile String phase = "";

    private SoakService(Path runDir, Path yarnSite) throws Exception {
        this.runDir = runDir;
        this.control = SoakFiles.control(runDir);
        this.samples = runDir.resolve(SAMPLES);
        Configuration conf = new Configuration();
        conf.addResource(new org.apache.hadoop.fs.Path(yarnSite.toUri()));
        this.localDir = Path.of(conf.get("yarn.nodemanager.local-dirs"));
        Files.createDirectories(localDir);
        // Spark's half: a stand-in that does nothing (its jar is not on this build's Maven mirror).
        Class<?> type = Class.forName(SERVICE_CLASS);
        Constructor<?> c = type.getDeclaredConstructor(AuxiliaryService.class);
        c.setAccessible(true);
        this.service = (AuxiliaryService) c.newInstance(new NoSparkHalf());
        service.init(conf);
        service.start();
        // The service's engine side (SparkServing, made by name where the JVM can run it) holds the server.
        Method engineSide = type.getDeclaredMethod("engine");
        engineSide.setAccessible(true);
        Object serving = engineSide.invoke(service);
        if (serving == null) {
            throw new IllegalStateException("the service's RDMA engine did not start: "
                    + type.getMethod("unavailable").invoke(service));
        }
        Method server = serving.getClass().getDeclaredMethod("server");
        server.setAccessible(true);
        this.rdmaAddress = (java.net.InetSocketAddress) type.getMethod("rdmaAddress").invoke(service);
        this.engine = ((SparkShuffleServer) server.invoke(serving)).engine();
        EngineConfig ec = engine.config();
        this.poolBytesPerTenant = (long) (ec.receiveBuffers() + ec.sendBuffers()) * ec.receiveBufferSize();
    }

    public static void main(String[] args) throws Exception {
        Path runDir = null;
        Path yarnSite = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--run-dir" -> runDir = Path.of(args[++i]);
                case "--yarn-site" -> yarnSite = Path.of(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        SoakService s = new SoakService(runDir, yarnSite);
        try {
            s.run();
        } finally {
            s.service.stop();
        }
        System.out.println("service stopped");
        System.exit(0);
    }

    private void run() throws Exception {
        App victim = startApplication(VICTIM_USER);
        SoakFiles.write(control.resolve(SoakFiles.VICTIM_APP), victim + " " + victim.secretText, true);
        SoakFiles.write(control.resolve(SoakFiles.SERVICE_READY), rdmaAddress.getAddress().getHostAddress() + ":"
                + rdmaAddress.getPort(), false);
        System.out.println("serving at " + rdmaAddress + "; victim application " + victim.id + " of " + VICTIM_USER
                + "; local dir " + localDir);
        SoakFiles.append(samples, HEADER);
        Thread sampler = Thread.ofPlatform().daemon().name("soak-sampler").start(this::sampleEverySecond);
        String seen = SoakFiles.phase(runDir);
        phase = seen;
        while (true) {
            answerAttacker();
            String now = SoakFiles.phase(runDir);
            if (!now.equals(seen)) {
                if (!seen.isEmpty() && !seen.equals("setup") && !seen.equals(SoakFiles.DONE)
                        && !seen.startsWith(SoakFiles.SETTLE_PREFIX)) {
                    endPhase(seen); // in the settle phase after it: nothing measured waits for the GC
                }
                seen = now;
                phase = now;
            }
            if (now.equals(SoakFiles.STOP)) {
                break;
            }
            Thread.sleep(50);
        }
        sampler.interrupt();
        stopAttackerApplication();
        service.stopApplication(new ApplicationTerminationContext(victim.id));
    }

    /** An application id and the secret YARN would hand over with it. */
    private record App(org.apache.hadoop.yarn.api.records.ApplicationId id, String secretText) {
        @Override
        public String toString() {
            return id.toString();
        }
    }

    private App startApplication(String user) {
        org.apache.hadoop.yarn.api.records.ApplicationId id = org.apache.hadoop.yarn.api.records.ApplicationId.newInstance(
                clusterTimestamp, nextAppId++);
        byte[] secret = new byte[32];
        random.nextBytes(secret);
        // As YARN's dispatcher: the user, the id, and the secret the application's master put in its launch context.
        service.initializeApplication(new ApplicationInitializationContext(user, id, ByteBuffer.wrap(secret)));
        return new App(id, Base64.getEncoder().encodeToString(secret));
    }

    /** The attacker asks for a new application ("K new") or for none ("K none"): the current one is stopped first. */
    private void answerAttacker() throws IOException {
        String want = SoakFiles.read(control.resolve(SoakFiles.ATTACKER_WANT));
        if (want.isEmpty()) {
            return;
        }
        String[] f = want.split(" ");
        long k = Long.parseLong(f[0]);
        if (k <= attackerRequestsDone) {
            return;
        }
        stopAttackerApplication();
        String reply;
        if (f[1].equals("new")) {
            App app = startApplication(ATTACKER_USER);
            attackerApp = app.id;
            attackerApps++;
            reply = k + " " + app + " " + app.secretText;
        } else {
            reply = k + " none";
        }
        attackerRequestsDone = k;
        SoakFiles.write(control.resolve(SoakFiles.ATTACKER_APP), reply, true);
    }

    private void stopAttackerApplication() throws IOException {
        if (attackerApp == null) {
            return;
        }
        org.apache.hadoop.yarn.api.records.ApplicationId app = attackerApp;
        attackerApp = null;
        service.stopApplication(new ApplicationTerminationContext(app));
        // The NodeManager deletes a finished application's directories (its deletion service).
        SoakFiles.deleteTree(SoakFiles.appDir(localDir, ATTACKER_USER, app.toString()));
    }

    /**
     * The end of {@code ended}: once the attacker holds no application and every stop is done (bounded),
     * a full GC, then the phase's end sample, then the marker the driver waits for.
     */
    private void endPhase(String ended) throws Exception {
        long deadline = System.nanoTime() + 60_000_000_000L;
        while ((attackerApp != null || engine.stopsUnderWay() > 0) && System.nanoTime() < deadline) {
            answerAttacker();
            Thread.sleep(50);
        }
        System.gc();
        Thread.sleep(300);
        sample(ended, "end");
        SoakFiles.write(control.resolve(SoakFiles.sampled(ended)), "ok", false);
    }

    private void sampleEverySecond() {
        long next = System.currentTimeMillis();
        while (!Thread.currentThread().isInterrupted()) {
            next += 1000;
            try {
                Thread.sleep(Math.max(0, next - System.currentTimeMillis()));
            } catch (InterruptedException e) {
                return;
            }
            try {
                sample(phase, "tick");
            } catch (RuntimeException e) {
                System.err.println("sample failed: " + e);
            }
        }
    }

    private synchronized void sample(String phaseName, String kind) {
        long heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        long direct = 0;
        long directBuffers = 0;
        for (BufferPoolMXBean p : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            if (p.getName().equals("direct")) {
                direct = p.getMemoryUsed();
                directBuffers = p.getCount();
            }
        }
        EngineCounters c = engine.counters();
        int tenants = engine.tenants();
        long pools = tenants * poolBytesPerTenant;
        SoakFiles.append(samples, String.join(",", Long.toString(System.currentTimeMillis()), phaseName, kind,
                Long.toString(heap), Long.toString(direct), Long.toString(directBuffers),
                Long.toString(c.registeredMapOutputBytes()), Long.toString(pools),
                Long.toString(c.registeredMapOutputBytes() + pools), Long.toString(lines(Path.of("/proc/self/maps"))),
                Long.toString(entries(Path.of("/proc/self/fd"))),
                Integer.toString(ManagementFactory.getThreadMXBean().getThreadCount()),
                Integer.toString(c.servingConnections()), Integer.toString(c.queuePairs()),
                Integer.toString(c.controlConnections()), Integer.toString(tenants), Integer.toString(engine.stopsUnderWay()),
                Integer.toString(attackerApps)));
    }

    private static long lines(Path file) {
        try (Stream<String> s = Files.lines(file)) {
            return s.count();
        } catch (IOException e) {
            return -1;
        }
    }

    private static long entries(Path dir) {
        try (Stream<Path> s = Files.list(dir)) {
            return s.count() - 1; // the listing's own descriptor
        } catch (IOException e) {
            return -1;
        }
    }

    /** Spark's half of spark_shuffle, doing nothing: the soak is of the RDMA half. */
    static final class NoSparkHalf extends AuxiliaryService {
        NoSparkHalf() {
            super("spark_shuffle");
        }

        @Override
        public void initializeApplication(ApplicationInitializationContext context) {
        }

        @Override
        public void stopApplication(ApplicationTerminationContext context) {
        }

        @Override
        public ByteBuffer getMetaData() {
            return ByteBuffer.allocate(0);
        }
    }
}
