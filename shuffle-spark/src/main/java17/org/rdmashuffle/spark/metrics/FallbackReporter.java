package org.rdmashuffle.spark.metrics;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;

import com.codahale.metrics.Gauge;
import org.apache.spark.api.plugin.PluginContext;

/**
 * The metrics plugin's executor side where this JVM cannot run the engine (RS09): no engine figures,
 * only what carries the shuffle and why. Registers {@code carrier.rdma} (0) and {@code
 * carrier.fallbackCode} and sends this executor's report to the driver whenever it changes (the shuffle
 * manager may be made after the plugin: "starting", then the reason). Owns one daemon thread
 * ("rdma-shuffle-metrics"), stopped by {@link #close}. Built for Java 17 (src/main/java17).
 */
public final class FallbackReporter implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(FallbackReporter.class.getName());

    private final PluginContext context;
    private final BiFunction<String, Long, ExecutorShuffleReport> reports;
    private final ScheduledExecutorService thread;
    private volatile ExecutorShuffleReport last;
    private long seq;

    /** @param reports this executor's report, by executor id and number */
    public FallbackReporter(PluginContext context, BiFunction<String, Long, ExecutorShuffleReport> reports, long periodMillis) {
        this.context = context;
        this.reports = reports;
        context.metricRegistry().register("carrier.rdma", (Gauge<Long>) () -> 0L);
        context.metricRegistry().register("carrier.fallbackCode", (Gauge<Long>) () -> {
            ExecutorShuffleReport r = last;
            return r == null ? 0L : r.fallbackCode();
        });
        thread = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "rdma-shuffle-metrics");
            t.setDaemon(true);
            return t;
        });
        thread.scheduleWithFixedDelay(this::tick, 0, periodMillis, TimeUnit.MILLISECONDS);
    }

    /** Sends the report if it changed since the last one sent. */
    private synchronized void tick() {
        try {
            ExecutorShuffleReport r = reports.apply(context.executorID(), 0L);
            if (!r.equals(last)) {
                context.send(r.withSeq(++seq));
                last = r;
            }
        } catch (java.io.IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, "rdma-shuffle: the metrics report was not sent", e);
        }
    }

    /** Stops the thread, then sends the last report if it changed (best effort: the driver may be gone). */
    @Override
    public void close() {
        thread.shutdownNow();
        try {
            if (thread.awaitTermination(2, TimeUnit.SECONDS)) {
                tick();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
