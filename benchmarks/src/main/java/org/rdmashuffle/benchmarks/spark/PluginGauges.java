package org.rdmashuffle.benchmarks.spark;

import java.io.IOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The registered memory of a run's executors as the plugin's own gauges say it ({@code registeredBytes}:
 * map-output bytes registered now; {@code fetch.bufferBytes}: fetch-buffer bytes registered now, see
 * docs/metrics.md). The driver's metrics do not carry them, and executors run no web server, so each
 * executor sends them here itself: Spark's StatsD sink, configured for the executors only ({@link
 * #settings}) with a filter that lets these two gauges through and nothing else, sends each once a
 * second as a datagram to a socket this driver opened. The highest of each executor's values is its
 * peak, sampled each second (fetch buffers are never deregistered while the engine runs: their last
 * value is their peak).
 *
 * <p>Every executor of every shuffle gets the same sink (Spark's own shuffle runs the plugin too, and
 * its gauges say 0). Threads: one receiving thread of its own (a daemon), started by {@link #open} and
 * stopped by {@link #finish}; the figures are kept under this object's lock. What arrives is bounded:
 * datagrams of at most 1,500 bytes, at most {@link #MAX_EXECUTORS} executors.
 */
final class PluginGauges implements AutoCloseable {
    static final String REGISTERED = "registeredBytes";
    static final String FETCH_BUFFERS = "fetch.bufferBytes";
    static final int MAX_EXECUTORS = 1000;
    /** A StatsD gauge line of one of the two: {@code <app id>.<executor id>.plugin.<plugin class>.<gauge>:<value>|g}. */
    private static final Pattern LINE = Pattern.compile(
            "(?:^|\\.)([^.:]+)\\.plugin\\.org\\.rdmashuffle\\.spark\\.RdmaShufflePlugin\\.(registeredBytes|fetch\\.bufferBytes):(-?[0-9.]+)\\|g");

    /** One executor's figures: the most map-output and fetch-buffer bytes it reported registered, and how many values came. */
    record Executor(String id, long peakRegistered, long peakFetchBuffers, int values) {
    }

    private final DatagramSocket socket;
    private final Thread receiver;
    private final Map<String, long[]> byExecutor = new TreeMap<>(); // id -> {registered, buffers, values}; guarded by this
    private final java.util.concurrent.atomic.AtomicLong datagrams = new java.util.concurrent.atomic.AtomicLong();

    private PluginGauges(DatagramSocket socket) {
        this.socket = socket;
        this.receiver = Thread.ofPlatform().daemon().name("plugin-gauges").unstarted(this::receiveUntilClosed);
    }

    /** Opens a socket at {@code host} (the driver's address, as executors reach it) and starts receiving. */
    static PluginGauges open(String host) throws IOException {
        PluginGauges g = new PluginGauges(new DatagramSocket(new InetSocketAddress(InetAddress.getByName(host), 0)));
        g.receiver.start();
        return g;
    }

    /** The Spark settings that make every executor send the two gauges here once a second. */
    Map<String, String> settings() {
        String sink = "spark.metrics.conf.executor.sink.statsd.";
        return Map.of(sink + "class", "org.apache.spark.metrics.sink.StatsdSink",
                sink + "host", socket.getLocalAddress().getHostAddress(),
                sink + "port", Integer.toString(socket.getLocalPort()),
                sink + "period", "1", sink + "unit", "seconds",
                sink + "regex", "RdmaShufflePlugin\\.(registeredBytes|fetch\\.bufferBytes)$");
    }

    private void receiveUntilClosed() {
        byte[] buffer = new byte[1500];
        DatagramPacket packet = new DatagramPacket(buffer, buffer.length);
        while (!socket.isClosed()) {
            try {
                packet.setLength(buffer.length);
                socket.receive(packet);
                datagrams.incrementAndGet();
                accept(new String(buffer, 0, packet.getLength(), StandardCharsets.UTF_8));
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    /** Takes what one datagram says (a line a gauge; anything else ignored). */
    void accept(String datagram) {
        for (String line : datagram.split("\n")) {
            Matcher m = LINE.matcher(line.trim());
            if (!m.find()) {
                continue;
            }
            long value;
            try {
                value = Math.round(Double.parseDouble(m.group(3)));
            } catch (NumberFormatException e) {
                continue;
            }
            synchronized (this) {
                if (!byExecutor.containsKey(m.group(1)) && byExecutor.size() >= MAX_EXECUTORS) {
                    continue;
                }
                long[] f = byExecutor.computeIfAbsent(m.group(1), id -> new long[3]);
                int which = m.group(2).equals(REGISTERED) ? 0 : 1;
                f[which] = Math.max(f[which], value);
                f[2]++;
            }
        }
    }

    /**
     * Waits (at most {@code waitMs}) for one more report from every executor heard from, so the last
     * second of the job is in, then stops receiving and returns each executor's figures by id.
     */
    Map<String, Executor> finish(long waitMs) throws InterruptedException {
        Map<String, Long> before = values();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMs);
        while (System.nanoTime() < deadline) {
            Map<String, Long> now = values();
            if (before.entrySet().stream().allMatch(e -> now.get(e.getKey()) > e.getValue() + 1)) { // two gauges a report
                break;
            }
            Thread.sleep(50);
        }
        close();
        receiver.join(TimeUnit.SECONDS.toMillis(5));
        return figures();
    }

    /** Each executor's figures now, by id. */
    synchronized Map<String, Executor> figures() {
        Map<String, Executor> out = new TreeMap<>();
        byExecutor.forEach((id, f) -> out.put(id, new Executor(id, f[0], f[1], (int) f[2])));
        return out;
    }

    private synchronized Map<String, Long> values() {
        Map<String, Long> m = new TreeMap<>();
        byExecutor.forEach((id, f) -> m.put(id, f[2]));
        return m;
    }

    /** Datagrams received, whatever they said. */
    long datagrams() {
        return datagrams.get();
    }

    @Override
    public void close() {
        socket.close();
    }
}
