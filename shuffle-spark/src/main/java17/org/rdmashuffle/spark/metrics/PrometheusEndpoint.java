package org.rdmashuffle.spark.metrics;

import java.io.IOException;
import java.io.OutputStream;
import java.util.Optional;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.apache.spark.SparkContext;
import org.apache.spark.ui.SparkUI;

/**
 * The driver's {@link PrometheusExposition}, served from the driver's own UI at {@value #PATH} (no port
 * of its own: Prometheus scrapes the port Spark's UI and its {@code /metrics/prometheus} already use, behind
 * the same filters and ACLs). Owns the handler it attaches to the UI, and detaches it in {@link #close}.
 * Where the UI is off there is nothing to attach to: {@link #attach} says so in the log and serves nothing.
 * Requests are answered on the UI's threads. Built for Java 17 (src/main/java17).
 */
public final class PrometheusEndpoint implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(PrometheusEndpoint.class.getName());
    /** Where the driver's UI serves the exposition (a request without the final '/' is redirected to it). */
    public static final String PATH = "/metrics/rdma-shuffle";

    private final SparkUI ui;

    private PrometheusEndpoint(SparkUI ui) {
        this.ui = ui;
    }

    /** Serves {@code exposition} from {@code sc}'s UI; empty (and said at WARN) where the UI is off. */
    public static Optional<PrometheusEndpoint> attach(SparkContext sc, PrometheusExposition exposition) {
        if (sc.ui().isEmpty()) {
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: the driver's UI is off (spark.ui.enabled=false), so no "
                    + "Prometheus exposition is served at " + PATH + "/; the figures stay in Spark's metrics system "
                    + "(docs/metrics.md)");
            return Optional.empty();
        }
        SparkUI ui = sc.ui().get();
        ui.attachHandler(PATH, new ExpositionServlet(exposition), "/");
        LOG.log(System.Logger.Level.INFO, "rdma-shuffle: the shuffle's Prometheus exposition is at " + ui.webUrl() + PATH + "/");
        return Optional.of(new PrometheusEndpoint(ui));
    }

    /** Detaches the handler (the UI may already have stopped with its SparkContext: then nothing is left to do). */
    @Override
    public void close() {
        try {
            ui.detachHandler(PATH);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, "rdma-shuffle: detaching " + PATH + " from the stopped UI", e);
        }
    }

    /** Writes the exposition in the text format, whatever the request asks. */
    private static final class ExpositionServlet extends HttpServlet {
        private static final long serialVersionUID = 1L;
        private final transient PrometheusExposition exposition;

        ExpositionServlet(PrometheusExposition exposition) {
            this.exposition = exposition;
        }

        @Override
        protected void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {
            response.setStatus(HttpServletResponse.SC_OK);
            response.setContentType(exposition.contentType());
            try (OutputStream out = response.getOutputStream()) {
                exposition.write(out);
            }
        }
    }
}
