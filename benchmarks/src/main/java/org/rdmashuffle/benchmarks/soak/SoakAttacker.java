package org.rdmashuffle.benchmarks.soak;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.HostileReducer;
import org.rdmashuffle.core.RdmaShuffleEngine;
import org.rdmashuffle.core.client.BlockFetchListener;
import org.rdmashuffle.core.client.FetchedBlock;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.control.AuthenticationException;
import org.rdmashuffle.core.control.ControlClient;
import org.rdmashuffle.core.protocol.ConnectCodec;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.protocol.MessageCodec;
import org.rdmashuffle.verbs.Gid;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.QueuePairEndpoint;
import org.rdmashuffle.verbs.software.SoftwareProvider;

/**
 * The hostile tenant: applications of user mallory, on a host of their own, cycling through every
 * attack of shuffle-core's {@code HostileTenantTest} and {@code HostileTenantBoundsTest} that a remote
 * tenant can make over the network, one at a time, each for a few seconds, round and round while the
 * phase is an attacked one. Every attack runs as a fresh application (the service stops the previous
 * one and starts a new id, as YARN would for a new job), so application stops are soaked too. What a
 * tenant plants on the service's node it writes into its own application's directory there (every
 * host sees the machine's file system). Each attack's start, end and outcome go to {@code attacks.log};
 * an outcome marked {@code UNEXPECTED} is the service doing what docs/security.md says it does not.
 * Not done: reading another application's region with a stolen descriptor, which needs the victim's
 * help to steal it.
 */
public final class SoakAttacker {
    static final String LOG = "attacks.log";
    private static final Duration CALL = Duration.ofSeconds(10);
    private static final int HUGE_PARTITIONS = 1_000_000;

    private final Path runDir;
    private final Path control;
    private final Path localDir;
    private final InetAddress here;
    private final InetAddress victimHost;
    private final InetSocketAddress service;
    private final long connectTimeoutMillis;
    private final SoftwareProvider provider;
    private long requests;
    private App app;
    private final List<Named> attacks = List.of(
            new Named("malformed-flood", this::malformedFlood),
            new Named("never-post-receives", this::neverPostReceives),
            new Named("one-byte-hard-links", this::oneByteHardLinks),
            new Named("ask-and-never-take", this::askAndNeverTake),
            new Named("control-connection-flood", this::controlConnectionFlood),
            new Named("huge-index-hard-links", this::hugeIndexHardLinks),
            new Named("never-acknowledge", this::neverAcknowledge),
            new Named("thousands-of-outputs-to-find", this::thousandsOfOutputsToFind),
            new Named("half-open-flood", this::halfOpenFlood),
            new Named("every-partition-of-a-huge-index", this::everyPartitionOfAHugeIndex),
            new Named("refused-requests-on-an-idle-connection", this::refusedRequestsOnAnIdleConnection),
            new Named("pin-by-describing", this::pinByDescribing),
            new Named("connect-naming-a-port-of-its-host", this::connectNamingAPortOfItsHost),
            new Named("connect-naming-another-address", this::connectNamingAnotherAddress),
            new Named("disconnect-guessed-queue-pairs", this::disconnectGuessedQueuePairs),
            new Named("links-to-the-victims-files", this::linksToTheVictimsFiles),
            new Named("more-queue-pairs-than-allowed", this::moreQueuePairsThanAllowed),
            new Named("session-outliving-its-application", this::sessionOutlivingItsApplication));

    /** The current application: its id, secret and directory on the service's node. */
    private record App(String id, byte[] secret, Path dir) {
    }

    @FunctionalInterface
    private interface Attack {
        /** Runs the attack and says what the service did; throws {@link Unexpected} when it did what it must not. */
        String run() throws Exception;
    }

    private record Named(String name, Attack attack) {
    }

    /** The service did what docs/security.md says it does not. */
    private static final class Unexpected extends Exception {
        Unexpected(String message) {
            super(message);
        }
    }

    private SoakAttacker(Path runDir, Path localDir, InetAddress here, InetAddress victimHost, InetSocketAddress service,
                         long connectTimeoutMillis) {
        this.runDir = runDir;
        this.control = SoakFiles.control(runDir);
        this.localDir = localDir;
        this.here = here;
        this.victimHost = victimHost;
        this.service = service;
        this.connectTimeoutMillis = connectTimeoutMillis;
        this.provider = newProvider(here);
    }

    public static void main(String[] args) throws Exception {
        Path runDir = null;
        Path localDir = null;
        String address = null;
        String victim = null;
        long connectTimeout = 3000;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--run-dir" -> runDir = Path.of(args[++i]);
                case "--service-local" -> localDir = Path.of(args[++i]);
                case "--address" -> address = args[++i];
                case "--victim-address" -> victim = args[++i];
                case "--connect-timeout-ms" -> connectTimeout = Long.parseLong(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        String[] s = SoakFiles.await(SoakFiles.control(runDir).resolve(SoakFiles.SERVICE_READY)).split(":");
        InetSocketAddress service = new InetSocketAddress(InetAddress.getByName(s[0]), Integer.parseInt(s[1]));
        new SoakAttacker(runDir, localDir, InetAddress.getByName(address), InetAddress.getByName(victim), service,
                connectTimeout).run();
        System.exit(0);
    }

    private static SoftwareProvider newProvider(InetAddress at) {
        return new SoftwareProvider(new SoftwareProvider.Config(at, 0, SoftwareProvider.Admission.ISSUED_TOKEN));
    }

    private void run() throws Exception {
        SoakFiles.write(control.resolve(SoakFiles.ATTACKER_STATE), SoakFiles.ATTACKER_IDLE, false);
        int next = 0;
        while (true) {
            String phase = SoakFiles.phase(runDir);
            if (phase.equals(SoakFiles.DONE)) {
                break;
            }
            if (!SoakFiles.isAttacked(phase)) {
                if (app != null) {
                    requestApplication(false);
                }
                SoakFiles.write(control.resolve(SoakFiles.ATTACKER_STATE), SoakFiles.ATTACKER_IDLE, false);
                Thread.sleep(50);
                continue;
            }
            Named attack = attacks.get(next++ % attacks.size());
            requestApplication(true);
            SoakFiles.write(control.resolve(SoakFiles.ATTACKER_STATE), "attacking " + attack.name(), false);
            log(phase, "START", attack.name(), app.id());
            long start = System.nanoTime();
            String result;
            try {
                result = "ok " + runBounded(attack);
            } catch (Unexpected e) {
                result = "UNEXPECTED " + e.getMessage();
            } catch (Exception | Error e) {
                result = "error " + e;
            }
            log(phase, "END", attack.name(), (System.nanoTime() - start) / 1_000_000 + "ms " + result.replace('\n', ' '));
        }
        if (app != null) {
            requestApplication(false);
        }
        provider.close();
    }

    /** Runs an attack on a thread of its own, waiting at most 90 s (a hung attack is itself a finding). */
    private String runBounded(Named attack) throws Exception {
        String[] out = new String[1];
        Exception[] failed = new Exception[1];
        Thread t = Thread.ofPlatform().daemon().name("attack-" + attack.name()).start(() -> {
            try {
                out[0] = attack.attack().run();
            } catch (Exception e) {
                failed[0] = e;
            }
        });
        t.join(90_000);
        if (t.isAlive()) {
            String where = Arrays.toString(t.getStackTrace());
            throw new Unexpected("the attack hung for 90 s (its thread is left behind): "
                    + where.substring(0, Math.min(400, where.length())));
        }
        if (failed[0] != null) {
            throw failed[0];
        }
        return out[0];
    }

    private void log(String phase, String what, String attack, String text) {
        SoakFiles.append(runDir.resolve(LOG), System.currentTimeMillis() + " " + phase + " " + what + " " + attack + " " + text);
    }

    /** Asks the service (as YARN) for a new application ({@code fresh}) or for none; the current one is stopped. */
    private void requestApplication(boolean fresh) throws Exception {
        long k = ++requests;
        SoakFiles.write(control.resolve(SoakFiles.ATTACKER_WANT), k + (fresh ? " new" : " none"), false);
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (true) {
            String[] f = SoakFiles.read(control.resolve(SoakFiles.ATTACKER_APP)).split(" ");
            if (f.length >= 2 && f[0].equals(Long.toString(k))) {
                app = fresh ? new App(f[1], Base64.getDecoder().decode(f[2]),
                        SoakFiles.appDir(localDir, SoakService.ATTACKER_USER, f[1])) : null;
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the service did not answer application request " + k + " in 60 s");
            }
            Thread.sleep(20);
        }
    }

    // ------------------------------------------------------------------ planting in its own directories

    /** An output in Spark's layout under block manager dir {@code manager}: its data and index files. */
    private static void plant(Path manager, int shuffle, long map, byte[] data, long[] offsets) throws IOException {
        String name = "shuffle_" + shuffle + "_" + map + "_0";
        Files.write(Files.createDirectories(manager.resolve(SoakFiles.sparkSubDir(name + ".data", 1))).resolve(name + ".data"),
                data);
        Files.write(Files.createDirectories(manager.resolve(SoakFiles.sparkSubDir(name + ".index", 1))).resolve(name + ".index"),
                SoakFiles.sparkIndex(offsets));
    }

    /** Output {@code map} as hard links to {@code data} and {@code index}. */
    private static void link(Path manager, long map, Path data, Path index) throws IOException {
        String name = "shuffle_0_" + map + "_0";
        Files.createLink(Files.createDirectories(manager.resolve(SoakFiles.sparkSubDir(name + ".data", 1))).resolve(name + ".data"),
                data);
        Files.createLink(Files.createDirectories(manager.resolve(SoakFiles.sparkSubDir(name + ".index", 1)))
                .resolve(name + ".index"), index);
    }

    /** A small honest output of {@code partitions} partitions of {@code size} bytes: map {@code map} of shuffle 0. */
    private byte[] plantSmall(long map, int partitions, int size) throws IOException {
        byte[] data = new byte[partitions * size];
        new Random(map).nextBytes(data);
        long[] offsets = new long[partitions + 1];
        for (int p = 1; p <= partitions; p++) {
            offsets[p] = (long) p * size;
        }
        plant(app.dir().resolve("blockmgr-honest"), 0, map, data, offsets);
        return data;
    }

    /** Holds what the attack made the service hold for a second and a bit: the service samples once a second. */
    private static void holdForTheSampler() throws InterruptedException {
        Thread.sleep(1200);
    }

    private HostileReducer reducer() throws IOException {
        return new HostileReducer(provider, service, app.id(), app.secret());
    }

    private ControlClient controlClient() throws IOException {
        return ControlClient.connect(service, app.secret(), app.id(), 64 << 10, CALL, here);
    }

    private static Message.FetchRequest request(long id, long map, int partition) {
        return new Message.FetchRequest(id, 0, List.of(BlockId.of(0, map, partition)));
    }

    private static int encode(Message m, java.lang.foreign.MemorySegment slot) {
        return new MessageCodec(HostileReducer.BUFFER).encode(m, slot);
    }

    private static QueuePairEndpoint softwareEndpoint(InetAddress host, int port) {
        return new QueuePairEndpoint(9, 0, Gid.ipv4Mapped((java.net.Inet4Address) host), port, Mtu.MTU_1024, "token");
    }

    private static byte[] connectNaming(InetAddress host, int port) {
        return ConnectCodec.encode(new ConnectCodec.Connect(4096, List.of(softwareEndpoint(host, port))));
    }

    // ------------------------------------------------------------------ the attacks

    /** Malformed messages one after another, no receive posted: the first closes the connection, the rest cost nothing. */
    private String malformedFlood() throws Exception {
        try (HostileReducer garbage = reducer()) {
            int sent = garbage.sendPaced(300, (k, slot) -> {
                slot.asSlice(0, 64).fill((byte) (0x5A + k));
                return 64;
            });
            return "300 malformed messages, " + sent + " sent before a send failed (the service closes on the first); its"
                    + " control connection is " + (garbage.controlOpen() ? "open" : "closed");
        }
    }

    /** Asks and never posts a receive: the service's answer meets RNR until its retries fail the connection. */
    private String neverPostReceives() throws Exception {
        plantSmall(1, 8, 5000);
        try (HostileReducer silent = reducer()) {
            silent.sendRaw(slot -> encode(request(1, 1, 0), slot));
            Thread.sleep(2500);
            return "asked once with no receive posted and waited 2.5 s";
        }
    }

    /**
     * One reducer of the application stops reading (its answers hold the send slots), another asks a
     * thousand times without taking: answers wait encoded, at most 256 per connection, then it is cut off.
     */
    private String askAndNeverTake() throws Exception {
        plantSmall(1, 2, 3000);
        try (SoftwareProvider frozen = newProvider(here);
             HostileReducer holder = new HostileReducer(frozen, service, app.id(), app.secret());
             HostileReducer greedy = new HostileReducer(provider, service, app.id(), app.secret(), 1024)) {
            holder.postReceives();
            holder.describe(0, List.of(BlockId.of(0, 1, 0)));
            frozen.stopReadingForTests();
            holder.sendWithoutWaiting(16, request(7, 1, 1));
            greedy.sendWithoutWaiting(1000, request(7, 1, 1));
            Thread.sleep(connectTimeoutMillis + 1000);
            return "a frozen reducer asked 16 times and a greedy one 1000 times without taking; after "
                    + (connectTimeoutMillis + 1000) + " ms their control connections are " + (holder.controlOpen() ? "open" : "closed")
                    + " and " + (greedy.controlOpen() ? "open" : "closed");
        }
    }

    /** Joins, asks, and never acknowledges (a fresh provider, its reads stopped): the send deadline cuts it off. */
    private String neverAcknowledge() throws Exception {
        plantSmall(1, 8, 5000);
        try (SoftwareProvider silentProvider = newProvider(here);
             HostileReducer silent = new HostileReducer(silentProvider, service, app.id(), app.secret())) {
            silent.postReceives();
            silent.describe(0, List.of(BlockId.of(0, 1, 0)));
            silentProvider.stopReadingForTests();
            for (int i = 0; i < 16; i++) {
                long id = 10 + i;
                silent.sendRaw(slot -> encode(request(id, 1, 1), slot));
            }
            Thread.sleep(connectTimeoutMillis + 1500);
            return "16 answers never acknowledged; after " + (connectTimeoutMillis + 1500) + " ms its control connection is "
                    + (silent.controlOpen() ? "open" : "closed");
        }
    }

    /**
     * Hundreds of outputs hard-linked to one byte: each registered would be a mapping and a region. Each
     * is described in a held answer the hoarder never releases, so its application's share of regions
     * stays held (for a lease); a request past it waits the service's lookup timeout (10 s) for a release
     * that never comes, then is refused: one past the share shows it (each costs the hoarder's own time).
     */
    private String oneByteHardLinks() throws Exception {
        int perApplication = 2048 / 4; // maxRegisteredRegions in the soak's yarn-site.xml, a quarter per application
        int outputs = perApplication + 1;
        Path manager = Files.createDirectories(app.dir().resolve("blockmgr-links"));
        Path one = Files.write(manager.resolve("one.data"), new byte[] {7});
        Path index = Files.write(manager.resolve("one.index"), SoakFiles.sparkIndex(new long[] {0, 1}));
        for (int m = 0; m < outputs; m++) {
            link(manager, m, one, index);
        }
        int registered = 0;
        int refused = 0;
        int other = 0;
        try (HostileReducer hoarder = reducer()) {
            hoarder.postReceives();
            for (int m = 0; m < outputs; m++) { // each described in a held answer, never released
                Message answer = hoarder.ask(request(m + 1, m, 0));
                if (answer instanceof Message.FetchResponse) {
                    registered++;
                } else if (answer instanceof Message.ErrorResponse e && e.reason().contains("registered memory")) {
                    refused++;
                } else {
                    other++;
                }
            }
            holdForTheSampler();
        }
        String text = outputs + " outputs linked to one byte: " + registered + " registered, " + refused
                + " refused (registered memory), " + other + " other answers";
        if (registered > perApplication || refused == 0) {
            throw new Unexpected(text + "; the application's share of regions is " + perApplication);
        }
        return text;
    }

    /** One index of a million partitions (8 MB) hard-linked as 16 outputs: index heap is bounded per application. */
    private String hugeIndexHardLinks() throws Exception {
        Path manager = Files.createDirectories(app.dir().resolve("blockmgr-huge"));
        Path[] files = plantHuge(manager);
        int outputs = 16;
        for (int m = 0; m < outputs; m++) {
            link(manager, m, files[0], files[1]);
        }
        int served = 0;
        int refused = 0;
        try (HostileReducer hoarder = reducer()) {
            hoarder.postReceives();
            for (int m = 0; m < outputs; m++) {
                Message answer = hoarder.ask(new Message.FetchRequest(m + 1, 0, List.of(BlockId.of(0, m, 0)), false));
                if (answer instanceof Message.ErrorResponse) {
                    refused++;
                } else {
                    served++;
                }
            }
            holdForTheSampler();
        }
        String text = outputs + " outputs sharing one index of " + HUGE_PARTITIONS + " partitions: " + served + " served, "
                + refused + " refused";
        if (served > 5) { // a quarter of maxIndexMemory (128 MiB) holds 4 such indexes
            throw new Unexpected(text + "; the application's index heap holds 4");
        }
        return text;
    }

    /** big.data and big.index: a million partitions of one byte each. */
    private static Path[] plantHuge(Path manager) throws IOException {
        long[] offsets = new long[HUGE_PARTITIONS + 1];
        for (int p = 1; p <= HUGE_PARTITIONS; p++) {
            offsets[p] = p;
        }
        Path data = Files.write(manager.resolve("big.data"), new byte[HUGE_PARTITIONS]);
        Path index = Files.write(manager.resolve("big.index"), SoakFiles.sparkIndex(offsets));
        return new Path[] {data, index};
    }

    /** Requests of 4,000 blocks each spanning every partition of a huge index: a block costs the poller a constant. */
    private String everyPartitionOfAHugeIndex() throws Exception {
        Path manager = Files.createDirectories(app.dir().resolve("blockmgr-huge"));
        Path[] files = plantHuge(manager);
        link(manager, 1, files[0], files[1]);
        try (HostileReducer heavy = reducer()) {
            heavy.postReceives();
            heavy.describe(0, List.of(new BlockId(0, 1, 0, HUGE_PARTITIONS)));
            List<BlockId> all = new ArrayList<>();
            for (int i = 0; i < 4000; i++) {
                all.add(new BlockId(0, 1, 0, HUGE_PARTITIONS));
            }
            int answers = heavy.flood(40, k -> new Message.FetchRequest(k + 2, 0, all, false));
            Thread.sleep(1000);
            return "40 requests of 4000 blocks spanning " + HUGE_PARTITIONS + " partitions sent, " + answers
                    + " answers taken during the flood";
        }
    }

    /** Requests naming thousands of outputs to find, among 16 block-manager dirs of 64 sub dirs each. */
    private String thousandsOfOutputsToFind() throws Exception {
        for (int b = 0; b < 16; b++) {
            Path manager = app.dir().resolve("blockmgr-" + b);
            for (int s = 0; s < 64; s++) {
                Files.createDirectories(manager.resolve(String.format("%02x", s)));
            }
        }
        try (HostileReducer flooder = reducer()) {
            int answers = flooder.flood(40, k -> {
                List<BlockId> hundred = new ArrayList<>();
                for (int m = 0; m < 100; m++) {
                    hundred.add(BlockId.of(0, 1000 + 100L * k + m, 0));
                }
                return new Message.FetchRequest(k + 1, 0, hundred);
            });
            Thread.sleep(2000);
            return "40 requests naming 100 missing outputs each (16 x 64 sub dirs to search) sent; " + answers
                    + " answers during the flood";
        }
    }

    /**
     * Describes big outputs over and over (each in a held answer never released, so within its lease): an
     * application pins at most its share. The one output past the share waits the lookup timeout (10 s)
     * for a release that never comes, then is refused.
     */
    private String pinByDescribing() throws Exception {
        int size = 16 << 20;
        long perApplication = (2048L << 20) / 4; // registeredMemoryLimit 2g in the soak's yarn-site.xml
        int outputs = (int) (perApplication / size) + 1;
        Path manager = Files.createDirectories(app.dir().resolve("blockmgr-pin"));
        Path data = Files.write(manager.resolve("big.data"), new byte[size]);
        Path index = Files.write(manager.resolve("big.index"), SoakFiles.sparkIndex(new long[] {0, size}));
        for (int m = 0; m < outputs; m++) {
            link(manager, m, data, index);
        }
        int described = 0;
        int refused = 0;
        try (HostileReducer hog = reducer()) {
            hog.postReceives();
            for (int m = 0; m < outputs; m++) {
                Message answer = hog.ask(request(m + 1, m, 0));
                if (answer instanceof Message.FetchResponse) {
                    described++;
                } else {
                    refused++;
                }
            }
            for (int m = 0; m < 8; m++) { // its own leases renewed
                hog.ask(request(100 + m, m, 0));
            }
            holdForTheSampler();
        }
        String text = outputs + " outputs of 16 MiB described: " + described + " registered (" + (described * (long) size >> 20)
                + " MiB), " + refused + " refused";
        if ((long) described * size > perApplication || refused == 0) {
            throw new Unexpected(text + "; the application's share is " + (perApplication >> 20) + " MiB");
        }
        return text;
    }

    /** Authenticated control connections until the service says busy; held a second, then closed. */
    private String controlConnectionFlood() throws Exception {
        List<ControlClient> held = new ArrayList<>();
        String refusal = null;
        try {
            for (int i = 0; i < 600 && refusal == null; i++) {
                try {
                    held.add(controlClient());
                } catch (IOException | RuntimeException e) {
                    refusal = e.getMessage();
                }
            }
            Thread.sleep(1000);
            int open = 0;
            for (ControlClient c : held) {
                open += c.isOpen() ? 1 : 0;
            }
            String text = held.size() + " authenticated control connections opened, " + open + " open after 1 s; then: "
                    + (refusal == null ? "never refused" : refusal);
            if (refusal == null) {
                throw new Unexpected(text + " (the application's bound is 512)");
            }
            return text;
        } finally {
            held.forEach(ControlClient::close);
        }
    }

    /** Connections that never authenticate (control port) or never say hello (the software provider's data listener). */
    private String halfOpenFlood() throws Exception {
        int dataPort;
        try (ControlClient probe = controlClient()) { // the data listener's port, as any reducer learns it
            dataPort = ConnectCodec.decode(probe.call(ConnectCodec.CONNECT, connectNaming(here, 9), CALL)).endpoints()
                    .getFirst().lid();
        }
        int each = 300;
        List<Socket> toControl = new ArrayList<>();
        List<Socket> toData = new ArrayList<>();
        try {
            for (int i = 0; i < each; i++) {
                toControl.add(open(service.getPort()));
                toData.add(open(dataPort));
            }
            Thread.sleep(connectTimeoutMillis + 1000);
            return each + " never authenticating to the control port: " + closed(toControl) + " closed by the service after "
                    + (connectTimeoutMillis + 1000) + " ms; " + each + " never saying hello to the data listener: "
                    + closed(toData) + " closed";
        } finally {
            for (Socket s : toControl) {
                s.close();
            }
            for (Socket s : toData) {
                s.close();
            }
        }
    }

    private Socket open(int port) throws IOException {
        Socket s = new Socket();
        s.bind(new InetSocketAddress(here, 0));
        s.connect(new InetSocketAddress(service.getAddress(), port), 5000);
        return s;
    }

    /** How many of {@code sockets} the peer has closed (or told "busy"): a read that does not time out. */
    private static int closed(List<Socket> sockets) throws IOException {
        int closed = 0;
        for (Socket s : sockets) {
            s.setSoTimeout(1);
            try {
                InputStream in = s.getInputStream();
                in.read();
                closed++;
            } catch (SocketTimeoutException open) {
                // still waiting
            } catch (IOException reset) {
                closed++;
            }
        }
        return closed;
    }

    /** Asks to be refused every 300 ms on a control connection that holds nothing. */
    private String refusedRequestsOnAnIdleConnection() throws Exception {
        try (ControlClient pest = controlClient()) {
            int refused = 0;
            long end = System.nanoTime() + 3_000_000_000L;
            while (pest.isOpen() && System.nanoTime() < end) {
                try {
                    pest.call(ConnectCodec.CONNECT, new byte[] {1, 2, 3}, CALL);
                } catch (IOException e) {
                    refused++;
                }
                Thread.sleep(300);
            }
            return refused + " requests refused in 3 s; the connection is " + (pest.isOpen() ? "open" : "closed")
                    + " (the idle timeout is twice fetchTimeout)";
        }
    }

    /** CONNECTs naming a port of its own host: a service's queue pairs are passive and never dial. */
    private String connectNamingAPortOfItsHost() throws Exception {
        try (ServerSocket target = new ServerSocket(0, 50, here)) {
            List<ControlClient> clients = new ArrayList<>();
            try {
                for (int i = 0; i < 4; i++) {
                    ControlClient c = controlClient();
                    clients.add(c);
                    c.call(ConnectCodec.CONNECT, connectNaming(here, target.getLocalPort()), CALL);
                }
                target.setSoTimeout(1000);
                try (Socket dialled = target.accept()) {
                    throw new Unexpected("the service dialled the port the reducer named, from " + dialled.getRemoteSocketAddress());
                } catch (SocketTimeoutException expected) {
                    return "4 CONNECTs naming port " + target.getLocalPort() + " of its host answered; no dial in 1 s";
                }
            } finally {
                clients.forEach(ControlClient::close);
            }
        }
    }

    /** A CONNECT naming another host's address (the victim's): refused, never dialled. */
    private String connectNamingAnotherAddress() throws Exception {
        try (ControlClient c = controlClient()) {
            try {
                c.call(ConnectCodec.CONNECT, connectNaming(victimHost, 9), CALL);
            } catch (IOException refused) {
                if (!refused.getMessage().contains("is not the address its control connection comes from")) {
                    return "refused otherwise than expected: " + refused.getMessage();
                }
                return "refused: " + refused.getMessage();
            }
            throw new Unexpected("a CONNECT naming " + victimHost.getHostAddress() + " was accepted");
        }
    }

    /** DISCONNECTs naming queue pairs it never set up (the lowest numbers, where the victim's are, and its neighbours'). */
    private String disconnectGuessedQueuePairs() throws Exception {
        try (HostileReducer r = reducer()) {
            int own = r.serverQpNumber();
            java.util.SortedSet<Integer> guesses = new java.util.TreeSet<>();
            for (int q = 1; q <= 200; q++) {
                guesses.add(q);
            }
            for (int q = Math.max(1, own - 300); q < own + 20; q++) {
                guesses.add(q);
            }
            guesses.remove(own);
            int refused = 0;
            List<Integer> ended = new ArrayList<>();
            for (int q : guesses) {
                try {
                    r.disconnect(q);
                    ended.add(q);
                } catch (IOException e) {
                    refused++;
                }
            }
            String text = guesses.size() + " DISCONNECTs of queue pairs not its own: " + refused + " refused";
            if (!ended.isEmpty()) {
                throw new Unexpected(text + ", " + ended.size() + " ended: " + ended);
            }
            return text;
        }
    }

    /** An output whose data file is a link to the victim's, and a block-manager dir linked to the victim's. */
    private String linksToTheVictimsFiles() throws Exception {
        Path victimApps = localDir.resolve("usercache").resolve(SoakService.VICTIM_USER).resolve("appcache");
        Path victimManager;
        try (Stream<Path> apps = Files.list(victimApps)) {
            Path victimApp = apps.findFirst().orElseThrow();
            try (Stream<Path> managers = Files.list(victimApp)) {
                victimManager = managers.filter(p -> p.getFileName().toString().startsWith("blockmgr-")).findFirst()
                        .orElseThrow();
            }
        }
        String name = "shuffle_0_0_0";
        Path victimData = victimManager.resolve(SoakFiles.sparkSubDir(name + ".data", 1)).resolve(name + ".data");
        Path victimIndex = victimManager.resolve(SoakFiles.sparkSubDir(name + ".index", 1)).resolve(name + ".index");
        Path manager = app.dir().resolve("blockmgr-stolen");
        String mine = "shuffle_0_1_0";
        Files.write(Files.createDirectories(manager.resolve(SoakFiles.sparkSubDir(mine + ".index", 1))).resolve(mine + ".index"),
                Files.readAllBytes(victimIndex));
        Files.createSymbolicLink(Files.createDirectories(manager.resolve(SoakFiles.sparkSubDir(mine + ".data", 1)))
                .resolve(mine + ".data"), victimData);
        Files.createSymbolicLink(app.dir().resolve("blockmgr-linked"), victimManager); // would find map 0 through it
        try (HostileReducer r = reducer()) {
            r.postReceives();
            Message linkedData = r.ask(request(1, 1, 0));
            Message linkedManager = r.ask(request(2, 0, 0));
            for (Message m : List.of(linkedData, linkedManager)) {
                if (!(m instanceof Message.ErrorResponse e)) {
                    throw new Unexpected("the victim's bytes were served through a link: " + m);
                }
                if (e.reason().contains(victimManager.toString()) || e.reason().contains(SoakService.VICTIM_USER)) {
                    throw new Unexpected("the refusal names the victim's files: " + e.reason());
                }
            }
            return "linked data file: " + ((Message.ErrorResponse) linkedData).kind() + " \""
                    + ((Message.ErrorResponse) linkedData).reason() + "\"; linked block manager dir: "
                    + ((Message.ErrorResponse) linkedManager).kind();
        }
    }

    /** An engine offering 64 queue pairs per connection: the service makes its own count (1), and serves it. */
    private String moreQueuePairsThanAllowed() throws Exception {
        int partitions = 8;
        int size = 5000;
        byte[] data = plantSmall(1, partitions, size);
        EngineConfig config = EngineConfig.defaults().set(EngineConfig.KEY_BIND_ADDRESS, here.getHostAddress())
                .set(EngineConfig.KEY_QPS_PER_PEER, "64").set(EngineConfig.KEY_FETCH_BUFFER_MEMORY, "16m");
        try (RdmaShuffleEngine greedy = RdmaShuffleEngine.start(config, app.id(), app.secret(), provider)) {
            List<BlockId> blocks = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                blocks.add(BlockId.of(0, 1, p));
            }
            CountDownLatch done = new CountDownLatch(partitions);
            ConcurrentHashMap<BlockId, String> wrong = new ConcurrentHashMap<>();
            greedy.fetchBlocks(service, blocks, new BlockFetchListener() {
                @Override
                public void onBlockFetched(FetchedBlock block) {
                    try {
                        byte[] got = new byte[(int) block.size()];
                        block.asByteBuffer().get(got);
                        int p = block.id().startPartition();
                        if (!Arrays.equals(got, Arrays.copyOfRange(data, p * size, (p + 1) * size))) {
                            wrong.put(block.id(), "bytes differ");
                        }
                    } finally {
                        block.release();
                        done.countDown();
                    }
                }

                @Override
                public void onBlockFetchFailure(BlockId block, Throwable cause) {
                    wrong.put(block, String.valueOf(cause));
                    done.countDown();
                }
            });
            if (!done.await(30, TimeUnit.SECONDS)) {
                return "its own fetch did not finish in 30 s";
            }
            int qps = greedy.counters().queuePairs();
            String text = "offered 64 queue pairs, holds " + qps + "; its own " + partitions + " blocks: "
                    + (wrong.isEmpty() ? "intact" : wrong);
            if (qps > 1) {
                throw new Unexpected(text);
            }
            return text;
        }
    }

    /** A control session kept across its application's stop: a CONNECT on it, and a new handshake, are refused. */
    private String sessionOutlivingItsApplication() throws Exception {
        App old = app;
        ControlClient lingering = controlClient();
        try {
            requestApplication(true); // YARN stops the application (and starts the tenant's next)
            String connect;
            try {
                lingering.call(ConnectCodec.CONNECT, connectNaming(here, 9), CALL);
                throw new Unexpected("a CONNECT on a session of stopped " + old.id() + " was accepted");
            } catch (IOException refused) {
                connect = "CONNECT refused (" + refused.getMessage() + ")";
            }
            try {
                ControlClient.connect(service, old.secret(), old.id(), 64 << 10, CALL, here).close();
                throw new Unexpected("a new handshake for stopped " + old.id() + " was accepted");
            } catch (AuthenticationException | IOException refused) {
                return connect + "; a new handshake refused (" + refused.getMessage() + ")";
            }
        } finally {
            lingering.close();
        }
    }
}
