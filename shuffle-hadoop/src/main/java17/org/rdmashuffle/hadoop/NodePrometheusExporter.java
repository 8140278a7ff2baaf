package org.rdmashuffle.hadoop;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.MetricsSystem;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.metrics2.lib.Interns;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import io.prometheus.metrics.config.EscapingScheme;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

/**
 * The NodeManager's Prometheus exposition of both rdma-shuffle services ({@link NodeExposition}), on
 * {@value HadoopKeys#PROMETHEUS_PORT} (unset: none): one per NodeManager. Hadoop's own {@code /prom}
 * derives names from records and metrics and cannot give application, kind or status as labels, so the
 * services serve their own. Each service {@link #claim}s it as it starts; the NodeManager loads each
 * service in a class loader of its own, so the claim is made where both meet, the NodeManager's metrics
 * system: the first service registers the source {@value #CLAIM_SOURCE} (under the metrics system's own
 * lock, so two services starting at once cannot both win) and owns the HTTP server; the other finds it
 * and serves nothing (its figures are read through its metrics2 source all the same). The owner closes
 * it in its {@code serviceStop}. Nothing here takes the NodeManager down: a bad port or one that cannot
 * be bound is one WARN naming the key, and the services serve as before without the exposition.
 *
 * <p>Served by the JDK's own HTTP server in the text format (what Prometheus asks for unless told
 * otherwise); the Prometheus client's HTTP server would bring its protocol-buffers format, and with it a
 * relocated protobuf, into the NodeManager. Scrapes run on two threads of its own (a burst past their
 * queue is answered on the HTTP server's dispatcher thread, which slows the next accepts: threads and
 * memory stay bounded whoever scrapes). Built for Java 17 (src/main/java17).
 */
final class NodePrometheusExporter implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(NodePrometheusExporter.class.getName());
    /** The metrics2 source whose registration is the claim (record of the same name: the port, the owner). */
    static final String CLAIM_SOURCE = "RdmaShufflePrometheusExporter";
    /** Where Prometheus reads it. */
    static final String PATH = "/metrics";
    private static final int SCRAPE_THREADS = 2;
    private static final int SCRAPES_QUEUED = 16;
    /** Connections waiting to be accepted (the JDK's default is the system's, often 4096). */
    private static final int BACKLOG = 16;

    private final MetricsSystem metricsSystem;
    private final HttpServer server;
    private final InetSocketAddress address;
    private final String why;
    private boolean closed;

    private NodePrometheusExporter(MetricsSystem metricsSystem, HttpServer server, InetSocketAddress address, String why) {
        this.metricsSystem = metricsSystem;
        this.server = server;
        this.address = address;
        this.why = why;
    }

    /**
     * The exposition for {@code service} ("service (mapreduce_shuffle)"): serving, if this service is the
     * first on the node to claim it and its port is set and free; else not, and {@link #why()} says why
     * (logged: a WARN where a setting or the port is at fault). Never throws.
     */
    static NodePrometheusExporter claim(Configuration conf, String service) {
        return claim(conf, service, DefaultMetricsSystem.instance());
    }

    static NodePrometheusExporter claim(Configuration conf, String service, MetricsSystem metricsSystem) {
        String raw = conf.getTrimmed(HadoopKeys.PROMETHEUS_PORT);
        if (raw == null || raw.isEmpty()) {
            return notServing(metricsSystem, HadoopKeys.PROMETHEUS_PORT + " is not set", System.Logger.Level.DEBUG);
        }
        int port;
        try {
            port = conf.getInt(HadoopKeys.PROMETHEUS_PORT, -1);
        } catch (NumberFormatException e) {
            port = -1;
        }
        if (port < 0 || port > 65535) {
            return notServing(metricsSystem, "rdma-shuffle " + service + ": no Prometheus exposition on this node: "
                    + HadoopKeys.PROMETHEUS_PORT + "=" + raw + " is not a port (0..65535, 0: any free port; unset: none)",
                    System.Logger.Level.WARNING);
        }
        String bind = conf.getTrimmed(HadoopKeys.PROMETHEUS_BIND_ADDRESS, "0.0.0.0");
        String node = nodeName(conf);
        try {
            synchronized (metricsSystem) { // MetricsSystemImpl's own lock: getSource and register take it too
                if (metricsSystem.getSource(CLAIM_SOURCE) != null) {
                    return notServing(metricsSystem, "the other rdma-shuffle service of this NodeManager serves the exposition "
                            + "(both services' figures)", System.Logger.Level.DEBUG);
                }
                PrometheusRegistry registry = new PrometheusRegistry();
                registry.register(new NodeExposition(metricsSystem, node));
                ThreadPoolExecutor scrapes = new ThreadPoolExecutor(SCRAPE_THREADS, SCRAPE_THREADS, 60, TimeUnit.SECONDS,
                        new ArrayBlockingQueue<>(SCRAPES_QUEUED), r -> {
                            Thread t = new Thread(r, "rdma-shuffle-prometheus");
                            t.setDaemon(true);
                            return t;
                        }, new ThreadPoolExecutor.CallerRunsPolicy());
                HttpServer server;
                try {
                    server = HttpServer.create(new InetSocketAddress(InetAddress.getByName(bind), port), BACKLOG);
                    server.setExecutor(scrapes);
                    server.createContext(PATH, exchange -> scrape(exchange, registry));
                    server.start();
                } catch (IOException | RuntimeException e) {
                    scrapes.shutdownNow();
                    return notServing(metricsSystem, "rdma-shuffle " + service + ": no Prometheus exposition on this node: "
                            + "cannot listen at " + bind + ":" + port + " (" + HadoopKeys.PROMETHEUS_PORT + ", "
                            + HadoopKeys.PROMETHEUS_BIND_ADDRESS + " in yarn-site.xml): " + e
                            + "; the NodeManager and its shuffle services go on without it", System.Logger.Level.WARNING);
                }
                InetSocketAddress at = new InetSocketAddress(bind, server.getAddress().getPort());
                NodePrometheusExporter exporter = new NodePrometheusExporter(metricsSystem, server, at, null);
                try {
                    metricsSystem.register(CLAIM_SOURCE, "rdma-shuffle's Prometheus exposition of this NodeManager",
                            exporter.new ClaimSource(service));
                } catch (RuntimeException e) {
                    stop(server); // no claim: nobody would close it
                    throw e;
                }
                LOG.log(System.Logger.Level.INFO, "rdma-shuffle " + service + ": both services' figures for Prometheus at http://"
                        + bind + ":" + at.getPort() + PATH + " (node " + node + ")");
                return exporter;
            }
        } catch (RuntimeException | LinkageError e) {
            return notServing(metricsSystem, "rdma-shuffle " + service + ": no Prometheus exposition on this node: " + e
                    + "; the NodeManager and its shuffle services go on without it", System.Logger.Level.WARNING);
        }
    }

    /** One scrape: GET (or HEAD) of {@value #PATH} answered with the text format; anything else 405. */
    private static void scrape(HttpExchange exchange, PrometheusRegistry registry) throws IOException {
        try (exchange) {
            String method = exchange.getRequestMethod();
            if (!method.equals("GET") && !method.equals("HEAD")) {
                exchange.getResponseHeaders().set("Allow", "GET, HEAD");
                exchange.sendResponseHeaders(405, -1);
                return;
            }
            PrometheusTextFormatWriter writer = PrometheusTextFormatWriter.create();
            ByteArrayOutputStream text = new ByteArrayOutputStream(16 * 1024);
            writer.write(text, registry.scrape(), EscapingScheme.UNDERSCORE_ESCAPING);
            exchange.getResponseHeaders().set("Content-Type", writer.getContentType());
            if (method.equals("HEAD")) {
                exchange.sendResponseHeaders(200, -1);
                return;
            }
            exchange.sendResponseHeaders(200, text.size());
            try (OutputStream body = exchange.getResponseBody()) {
                text.writeTo(body);
            }
        }
    }

    /** Stops the server at once (a scrape under way is cut short) and its scrape threads with it. */
    private static void stop(HttpServer server) {
        server.stop(0);
        if (server.getExecutor() instanceof ThreadPoolExecutor scrapes) {
            scrapes.shutdownNow();
        }
    }

    private static NodePrometheusExporter notServing(MetricsSystem metricsSystem, String why, System.Logger.Level level) {
        LOG.log(level, why);
        return new NodePrometheusExporter(metricsSystem, null, null, why);
    }

    /**
     * The {@code node} label: {@code yarn.nodemanager.hostname} where it names the node, else the host's
     * name, as the NodeManager registers itself.
     */
    static String nodeName(Configuration conf) {
        String configured = conf.getTrimmed(HadoopKeys.NODE_MANAGER_HOSTNAME);
        if (configured != null && !configured.isEmpty() && !configured.equals("0.0.0.0")) {
            return configured;
        }
        try {
            return InetAddress.getLocalHost().getCanonicalHostName();
        } catch (IOException e) {
            return "localhost";
        }
    }

    /** Where it listens, or null where it does not serve. */
    InetSocketAddress address() {
        return address;
    }

    /** Why this service serves no exposition (not set, a bad setting, the port taken, the other service serves it), or null. */
    String why() {
        return why;
    }

    /** Stops serving and gives up the claim (the owner's, in its serviceStop); idempotent; nothing to do where it did not serve. */
    @Override
    public synchronized void close() {
        if (server == null || closed) {
            return;
        }
        closed = true;
        try {
            metricsSystem.unregisterSource(CLAIM_SOURCE);
        } finally {
            stop(server);
        }
    }

    /** The claim, as metrics2 shows it: record {@value #CLAIM_SOURCE}, gauge {@code Port}, tag {@code Service}. */
    private final class ClaimSource implements MetricsSource {
        private final String service;

        ClaimSource(String service) {
            this.service = service;
        }

        @Override
        public void getMetrics(MetricsCollector collector, boolean all) {
            collector.addRecord(CLAIM_SOURCE).setContext("rdma-shuffle")
                    .tag(Interns.info("Service", "the service that serves the exposition"), service)
                    .addGauge(Interns.info("Port", "the port of the node's Prometheus exposition"), address.getPort());
        }
    }
}
