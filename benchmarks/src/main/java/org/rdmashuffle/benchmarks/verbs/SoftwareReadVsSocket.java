package org.rdmashuffle.benchmarks.verbs;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Locale;

import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.Gid;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.QueuePairEndpoint;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.WorkCompletions;
import org.rdmashuffle.verbs.software.SoftwareProvider;

/**
 * The software provider's RDMA_READ throughput between two JVMs on loopback, against a plain Java
 * socket copy of the same bytes, alternated in one run:
 * <ul>
 *   <li>rdma: this JVM reads {@code SIZE}-byte blocks from a region registered in a child JVM, as
 *       many reads in flight, in chains as long, as the engine's defaults post to one peer (chains
 *       of up to {@code chainLength} reads and {@code maxBytesInFlightPerPeer / maxChainsInFlightPerPeer}
 *       bytes, up to {@code maxChainsInFlightPerPeer} of them, the last read of each signaled): 128
 *       reads in chains of 16 at 64 KiB, 32 in chains of 4 at 1 MiB;
 *   <li>socket: this JVM asks the child for the same blocks over a plain SocketChannel (an 8-byte
 *       request each, as many bytes in flight) and the child writes them from the same native memory.
 * </ul>
 * {@code --depth READS:CHAIN} sets both instead (before 2026-11-25: 16 reads in chains of 4 at every size).
 * Six timed rounds of 2 GiB each way per size, after an untimed one; who goes first alternates by
 * round. Prints MB/s (10^6 bytes) per round, the ratio rdma/socket (of the sums), and heap bytes
 * allocated per read in this JVM. {@code java -cp benchmarks.jar ...SoftwareReadVsSocket [--file | --file-mapped] [--spin] [SIZE...]}: from a
 * file registered with {@code registerOwnedFile} (sendfile) or {@code registerFile} (the mapping), the socket
 * side then sending from the file with {@code transferTo}; by default from anonymous memory. The reading
 * side polls its CQ as the engine's poller does on the software provider (by default, since 2026-11-25,
 * no busy poll: an empty poll arms the CQ and waits on its completion channel; before, it yielded for
 * 50 us first: {@code --busy-poll 50}); {@code --spin}: yielding for as long as the CQ is empty.
 */
public final class SoftwareReadVsSocket {
    /** Bytes per timed round: 2 GiB, ~1 s at these rates, so a scheduling hiccup weighs little. */
    private static final long VOLUME = 2L << 30;
    private static final int ROUNDS = 6;
    private static final int REGION = 64 << 20;
    /** Reads in flight and reads per chain: per size, the engine's; or {@code --depth READS:CHAIN}. */
    private static int inFlight;
    private static int chainReads;
    private static String depth;
    /** How long the poller polls an empty CQ before it sleeps: {@code --busy-poll MICROS}, by default the engine's {@code busyPoll} on the software provider. */
    private static long busyPollNanos = org.rdmashuffle.core.config.EngineConfig.defaults()
            .busyPollOn(org.rdmashuffle.verbs.software.SoftwareProvider.instance()).toNanos();
    private static boolean spin;
    private static final ConnectOptions OPTIONS = ConnectOptions.defaults(1, 0, Mtu.MTU_4096);

    private SoftwareReadVsSocket() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("serve")) {
            serve(args[1]);
            return;
        }
        // --file: a file registered with registerOwnedFile (read answers sent with sendfile); --file-mapped: the
        // same file registered with registerFile (answers written from the mapping); else anonymous memory.
        // --spin: the reading side polls its CQ yielding forever (what this benchmark did before 2026-11-25);
        // by default it polls as the engine's poller does on the software provider: for busyPoll (none by
        // default; --busy-poll MICROS), yielding, then waiting on the CQ's completion channel.
        spin = java.util.Arrays.asList(args).contains("--spin");
        java.util.List<String> rest = new java.util.ArrayList<>(java.util.Arrays.asList(args));
        int bp = rest.indexOf("--busy-poll");
        if (bp >= 0) {
            busyPollNanos = Long.parseLong(rest.get(bp + 1)) * 1000;
            rest.subList(bp, bp + 2).clear();
            args = rest.toArray(String[]::new);
        }
        int dp = rest.indexOf("--depth");
        if (dp >= 0) {
            depth = rest.get(dp + 1);
            rest.subList(dp, dp + 2).clear();
            args = rest.toArray(String[]::new);
        }
        String mode = java.util.Arrays.stream(args).filter(a -> a.startsWith("--") && !a.equals("--spin")).findFirst()
                .orElse("--memory");
        int[] sizes = java.util.Arrays.stream(args).filter(a -> !a.startsWith("--")).mapToInt(Integer::parseInt).toArray();
        if (sizes.length == 0) {
            sizes = new int[] {65536, 1 << 20};
        }
        System.out.println(spin ? "poller: yields while the CQ is empty (--spin)"
                : "poller: as the engine's (yields for " + busyPollNanos / 1000 + " us, then waits on the completion channel)");
        System.out.println(switch (mode) {
            case "--file" -> "served from a file registered with registerOwnedFile (answers sent with sendfile); the socket side with transferTo";
            case "--file-mapped" -> "served from a file registered with registerFile (answers written from the mapping); the socket side with transferTo";
            default -> "served from anonymous memory";
        });
        System.out.println(depth == null ? "depth: the engine's defaults for one peer" : "depth: " + depth + " (reads in flight:chain)");
        int maxInFlight = 0;
        long landing = 0;
        for (int size : sizes) {
            setDepth(size);
            maxInFlight = Math.max(maxInFlight, inFlight);
            landing = Math.max(landing, (long) inFlight * size);
        }
        Process child = new ProcessBuilder(ProcessHandle.current().info().command().orElse("java"),
                "--enable-native-access=ALL-UNNAMED", "-Xmx512m", "-cp", System.getProperty("java.class.path"),
                SoftwareReadVsSocket.class.getName(), "serve", mode)
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try (BufferedReader fromChild = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.US_ASCII));
             PrintStream toChild = new PrintStream(child.getOutputStream(), true, StandardCharsets.US_ASCII);
             SoftwareProvider provider = new SoftwareProvider(SoftwareProvider.Config.loopback());
             VerbsContext ctx = provider.devices().getFirst().open()) {
            String[] served = fromChild.readLine().split(" ");
            QueuePairEndpoint remote = endpoint(served);
            long remoteAddress = Long.parseLong(served[6]);
            int rkey = Integer.parseInt(served[7]);
            int socketPort = Integer.parseInt(served[8]);
            try (ProtectionDomain pd = ctx.allocateProtectionDomain();
                 org.rdmashuffle.verbs.CompletionChannel channel = ctx.createCompletionChannel();
                 CompletionQueue cq = ctx.createCompletionQueue(maxInFlight * 2, channel, 0);
                 QueuePair qp = pd.createQueuePair(QueuePairConfig.of(cq, maxInFlight * 2, 1, 1));
                 MemoryRegion local = pd.allocateAndRegister(landing, Access.LOCAL_WRITE);
                 SocketChannel socket = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), socketPort))) {
                socket.socket().setTcpNoDelay(true);
                toChild.println(line(qp.localEndpoint(OPTIONS)));
                qp.connect(remote, OPTIONS);
                if (!fromChild.readLine().equals("connected")) {
                    throw new IllegalStateException("child did not connect");
                }
                for (int size : sizes) {
                    setDepth(size);
                    System.out.printf(Locale.ROOT, "size %d: %d reads in flight, chains of %d; the socket %d requests in flight%n",
                            size, inFlight, chainReads, inFlight);
                    double rdma = 0;
                    double plain = 0;
                    long allocated = 0;
                    long reads = 0;
                    rdmaRound(qp, cq, channel, local, remoteAddress, rkey, size, VOLUME); // warm-up: let the JIT compile both paths
                    socketRound(socket, local, size, VOLUME);
                    for (int round = 1; round <= ROUNDS; round++) {
                        // Who goes first alternates: a round's first half may find the machine in another state (JIT, caches, the other JVM).
                        boolean socketFirst = round % 2 == 1;
                        double s = socketFirst ? socketRound(socket, local, size, VOLUME) : 0;
                        long before = allocatedBytes();
                        double r = rdmaRound(qp, cq, channel, local, remoteAddress, rkey, size, VOLUME);
                        allocated += allocatedBytes() - before;
                        reads += VOLUME / size;
                        if (!socketFirst) {
                            s = socketRound(socket, local, size, VOLUME);
                        }
                        System.out.printf(Locale.ROOT, "size %d round %d (%s first): socket copy %.0f MB/s, software RDMA_READ %.0f MB/s%n",
                                size, round, socketFirst ? "socket" : "rdma", s, r);
                        rdma += r;
                        plain += s;
                    }
                    System.out.printf(Locale.ROOT, "size %d: ratio software RDMA_READ / socket copy %.2f; heap allocated %.0f B per read (this JVM, all threads)%n",
                            size, rdma / plain, (double) allocated / reads);
                }
            }
            toChild.close();
            child.waitFor();
        } finally {
            child.destroy();
        }
    }

    /** Keeps the depth of reads of {@code size} in flight until {@code volume} bytes were read; MB/s. */
    private static double rdmaRound(QueuePair qp, CompletionQueue cq, org.rdmashuffle.verbs.CompletionChannel channel,
                                    MemoryRegion local, long remote, int rkey, int size,
                                    long volume) {
        int chains = inFlight / chainReads;
        long span = REGION - (long) size * chainReads;
        SendWorkRequests[] chain = new SendWorkRequests[chains];
        for (int c = 0; c < chains; c++) {
            chain[c] = SendWorkRequests.allocate(chainReads, 1);
        }
        long total = volume / ((long) size * chainReads);
        long posted = 0;
        long done = 0;
        long start = System.nanoTime();
        try (WorkCompletions wc = WorkCompletions.allocate(chains)) {
            for (int c = 0; c < chains && posted < total; c++) {
                post(qp, chain[c], c, local, remote, rkey, size, (posted++ * size * chainReads) % span);
            }
            long idleSince = 0;
            while (done < total) {
                int n = cq.poll(wc);
                if (n == 0 && !spin) {
                    long now = System.nanoTime();
                    if (idleSince == 0) {
                        idleSince = now;
                    }
                    if (now - idleSince >= busyPollNanos) {
                        cq.requestNotify(false);
                        n = cq.poll(wc); // one that came before the arm raises no event
                        if (n == 0) {
                            CompletionQueue woke = channel.awaitEvent(java.time.Duration.ofMillis(100));
                            if (woke != null) {
                                woke.acknowledgeEvents(1);
                            }
                            idleSince = 0;
                            continue;
                        }
                    }
                }
                if (n > 0) {
                    idleSince = 0;
                }
                for (int i = 0; i < n; i++) {
                    if (!wc.isSuccess(i)) {
                        throw wc.failure(i);
                    }
                    done++;
                    if (posted < total) {
                        int c = (int) wc.wrId(i);
                        post(qp, chain[c], c, local, remote, rkey, size, (posted++ * size * chainReads) % span);
                    }
                }
                if (n == 0) {
                    // The provider's own threads do the transfer: on a 2-core machine a spinning poller would starve them.
                    Thread.yield();
                }
            }
        } finally {
            for (SendWorkRequests c : chain) {
                c.close();
            }
        }
        return total * size * chainReads / ((System.nanoTime() - start) / 1e3);
    }

    private static void post(QueuePair qp, SendWorkRequests chain, int slot, MemoryRegion local, long remote, int rkey,
                             int size, long offset) {
        for (int i = 0; i < chainReads; i++) {
            long localOffset = ((long) slot * chainReads + i) * size % local.length();
            chain.get(i).rdmaRead(slot, i == chainReads - 1 ? SendFlags.SIGNALED : 0, local, localOffset, size,
                    remote + offset + (long) i * size, rkey);
        }
        qp.postSend(chain, chainReads);
    }

    /** The same blocks over a plain socket: as many 8-byte requests outstanding as reads in flight, each answered with SIZE bytes. */
    private static double socketRound(SocketChannel socket, MemoryRegion local, int size, long volume) throws IOException {
        long total = volume / size;
        ByteBuffer request = ByteBuffer.allocateDirect(8 * inFlight);
        ByteBuffer into = local.segment().asSlice(0, size).asByteBuffer();
        long sent = 0;
        long received = 0;
        long start = System.nanoTime();
        while (received < total) {
            request.clear();
            while (sent < total && sent - received < inFlight) {
                // One word per request: size in the high half, offset in the low half.
                request.putLong(((long) size << 32) | ((sent++ * size) % (REGION - size)));
            }
            request.flip();
            while (request.hasRemaining()) {
                socket.write(request);
            }
            into.clear();
            while (into.hasRemaining()) {
                if (socket.read(into) < 0) {
                    throw new IOException("child closed the socket");
                }
            }
            received++;
        }
        return total * (double) size / ((System.nanoTime() - start) / 1e3);
    }

    /**
     * What the engine posts to one peer for blocks of {@code size} with its defaults (PeerFetcher's limits:
     * a chain ends at chainLength reads or maxChainBytes; up to maxChainsInFlightPerPeer chains and
     * maxBytesInFlightPerPeer bytes in flight), or {@code --depth READS:CHAIN}.
     */
    private static void setDepth(int size) {
        if (depth != null) {
            String[] d = depth.split(":");
            inFlight = Integer.parseInt(d[0]);
            chainReads = Integer.parseInt(d[1]);
            if (chainReads < 1 || inFlight % chainReads != 0) {
                throw new IllegalArgumentException("--depth READS:CHAIN, READS a multiple of CHAIN: " + depth);
            }
            return;
        }
        org.rdmashuffle.core.config.EngineConfig c = org.rdmashuffle.core.config.EngineConfig.defaults();
        chainReads = (int) Math.max(1, Math.min(c.chainLength(), c.maxChainBytes() / size));
        int chains = (int) Math.max(1, Math.min(c.maxChainsInFlightPerPeer(), c.maxBytesInFlightPerPeer() / ((long) chainReads * size)));
        inFlight = chains * chainReads;
    }

    private static long allocatedBytes() {
        return ((com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean()).getTotalThreadAllocatedBytes();
    }

    /**
     * Child: registers REGION bytes (anonymous memory, or with {@code fromFile} a file registered with
     * {@code registerOwnedFile}), serves RDMA reads through its provider and plain-socket requests by hand
     * (from the same memory, or from the file with {@code transferTo}: the same advantage both ways).
     */
    private static void serve(String mode) throws Exception {
        boolean fromFile = !mode.equals("--memory");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        java.nio.file.Path file = fromFile ? java.nio.file.Files.createTempFile("rdma-shuffle-read", ".data") : null;
        try (SoftwareProvider provider = new SoftwareProvider(SoftwareProvider.Config.loopback().withSendfile(mode.equals("--file")));
             VerbsContext ctx = provider.devices().getFirst().open();
             ProtectionDomain pd = ctx.allocateProtectionDomain();
             CompletionQueue cq = ctx.createCompletionQueue(4, null, 0);
             QueuePair qp = pd.createQueuePair(QueuePairConfig.of(cq, 4, 1, 1));
             MemoryRegion region = fromFile ? registerFile(pd, file, mode.equals("--file")) : pd.allocateAndRegister(REGION, Access.LOCAL_WRITE | Access.REMOTE_READ);
             java.nio.channels.FileChannel socketSource = fromFile ? java.nio.channels.FileChannel.open(file) : null;
             ServerSocketChannel server = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            if (!fromFile) {
                for (long i = 0; i < REGION; i += 8) {
                    region.segment().set(java.lang.foreign.ValueLayout.JAVA_LONG, i, pattern(i));
                }
            }
            int port = ((InetSocketAddress) server.getLocalAddress()).getPort();
            System.out.println(line(qp.localEndpoint(OPTIONS)) + " " + region.address() + " " + region.rkey() + " " + port);
            qp.connect(endpoint(in.readLine().split(" ")), OPTIONS);
            Thread socketServer = Thread.ofPlatform().daemon().start(() -> serveSocket(server, region, socketSource));
            System.out.println("connected");
            while (in.readLine() != null) {
                // parent keeps stdin open until it is done
            }
            server.close();
            socketServer.join(2000);
        } finally {
            if (file != null) {
                java.nio.file.Files.deleteIfExists(file);
            }
        }
    }

    private static long pattern(long offset) {
        return offset * 0x9E3779B97F4A7C15L;
    }

    /** Writes the pattern into {@code file} and registers it read-only; {@code owned}: the region takes the channel (sendfile). */
    private static MemoryRegion registerFile(ProtectionDomain pd, java.nio.file.Path file, boolean owned) throws IOException {
        try (java.nio.channels.FileChannel out = java.nio.channels.FileChannel.open(file, java.nio.file.StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocateDirect(1 << 20).order(java.nio.ByteOrder.nativeOrder());
            for (long at = 0; at < REGION; at += b.capacity()) {
                b.clear();
                for (int i = 0; i < b.capacity(); i += 8) {
                    b.putLong(i, pattern(at + i));
                }
                while (b.hasRemaining()) {
                    out.write(b);
                }
            }
        }
        if (owned) {
            return pd.registerOwnedFile(java.nio.channels.FileChannel.open(file), 0, REGION, Access.REMOTE_READ);
        }
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(file)) {
            return pd.registerFile(ch, 0, REGION, Access.REMOTE_READ);
        }
    }

    private static void serveSocket(ServerSocketChannel server, MemoryRegion region, java.nio.channels.FileChannel file) {
        try (SocketChannel s = server.accept()) {
            s.socket().setTcpNoDelay(true);
            ByteBuffer request = ByteBuffer.allocateDirect(8);
            while (true) {
                request.clear();
                while (request.hasRemaining()) {
                    if (s.read(request) < 0) {
                        return;
                    }
                }
                long word = request.getLong(0);
                int size = (int) (word >>> 32);
                long offset = word & 0xFFFFFFFFL;
                if (file != null) {
                    for (long sent = 0; sent < size; ) {
                        sent += file.transferTo(offset + sent, size - sent, s);
                    }
                    continue;
                }
                ByteBuffer out = region.segment().asSlice(offset, size).asByteBuffer();
                while (out.hasRemaining()) {
                    s.write(out);
                }
            }
        } catch (IOException e) {
            // parent went away
        }
    }

    private static String line(QueuePairEndpoint e) {
        return e.qpNumber() + " " + e.psn() + " " + HexFormat.of().formatHex(e.gid().bytes()) + " " + e.lid() + " "
                + e.mtu().name() + " " + e.admissionToken();
    }

    private static QueuePairEndpoint endpoint(String[] f) {
        return new QueuePairEndpoint(Integer.parseInt(f[0]), Integer.parseInt(f[1]), Gid.of(HexFormat.of().parseHex(f[2])),
                Integer.parseInt(f[3]), Mtu.valueOf(f[4]), f[5]);
    }
}
