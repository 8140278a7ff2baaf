package org.rdmashuffle.spark;

import java.util.Map;

import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;
import org.rdmashuffle.spark.metrics.DriverShuffleMetrics;
import org.rdmashuffle.spark.metrics.FallbackReporter;
import org.rdmashuffle.spark.metrics.PrometheusEndpoint;
import org.rdmashuffle.spark.metrics.PrometheusExposition;
import org.rdmashuffle.verbs.EngineRuntime;

/**
 * {@code spark.plugins=org.rdmashuffle.spark.RdmaShufflePlugin}: the shuffle's figures in Spark's
 * metrics system (docs/metrics.md). Each executor registers what its engine and manager count
 * ({@code ExecutorShuffleMetrics}: every sink configured for executors gets them) and reports them to
 * the driver once a second while they change; the driver publishes the application's view, per
 * executor and in total ({@link DriverShuffleMetrics}), which Spark's Prometheus servlet serves. Loads
 * and reports "fallback" with the reason whether or not RDMA carries the shuffle, and with Spark's own
 * shuffle manager; a sink that fails never reaches a task.
 *
 * <p>Built for Java 17 (src/main/java17), as Spark loads it by name on any JVM: the driver's side runs
 * everywhere; an executor on a JVM too old for the engine reports its reason ({@code RS09 jvm}) through
 * a {@link FallbackReporter} instead of the engine's metrics.
 */
public final class RdmaShufflePlugin implements SparkPlugin {
    /** How often an executor reports to the driver (only reports that changed are sent). */
    public static final String REPORT_INTERVAL = RdmaShuffleManager.PREFIX + "metrics.reportInterval";
    /** Also publish each executor's RDMA blocks by serving host on the driver (executors x hosts series; default false). */
    public static final String PER_LINK = RdmaShuffleManager.PREFIX + "metrics.perLink";
    /**
     * Serve the application's figures with labels in Prometheus' text format from the driver's UI at
     * {@value org.rdmashuffle.spark.metrics.PrometheusEndpoint#PATH}/ (default true; docs/metrics.md).
     */
    public static final String PROMETHEUS = RdmaShuffleManager.PREFIX + "metrics.prometheus";
    /** The executor's side where the engine runs, built for the engine's Java. */
    static final String ENGINE_EXECUTOR_PLUGIN = "org.rdmashuffle.spark.metrics.EngineExecutorPlugin";

    @Override
    public DriverPlugin driverPlugin() {
        return new DriverPlugin() {
            private volatile DriverShuffleMetrics metrics;
            private PrometheusEndpoint endpoint;

            @Override
            public Map<String, String> init(SparkContext sc, PluginContext context) {
                metrics = new DriverShuffleMetrics(context.metricRegistry(), sc.conf().getBoolean(PER_LINK, false));
                if (prometheus(sc.conf())) {
                    endpoint = PrometheusEndpoint.attach(sc, new PrometheusExposition(sc::applicationId, metrics)).orElse(null);
                }
                return Map.of();
            }

            /** Takes the application's series away with its SparkContext. */
            @Override
            public void shutdown() {
                if (endpoint != null) {
                    endpoint.close();
                }
            }

            @Override
            public Object receive(Object message) {
                DriverShuffleMetrics m = metrics;
                if (m != null) {
                    m.receive(message);
                }
                return null;
            }
        };
    }

    @Override
    public ExecutorPlugin executorPlugin() {
        if (EngineRuntime.unavailable().isEmpty()) {
            return EngineRuntime.load(RdmaShufflePlugin.class, ExecutorPlugin.class, ENGINE_EXECUTOR_PLUGIN, new Class<?>[0]);
        }
        return new ExecutorPlugin() {
            private FallbackReporter reporter;

            @Override
            public void init(PluginContext context, Map<String, String> extraConf) {
                reporter = new FallbackReporter(context, (id, seq) -> RdmaShuffleManager.report(id, seq).on(executorHost()),
                        reportInterval(context));
            }

            @Override
            public void shutdown() {
                if (reporter != null) {
                    reporter.close();
                }
            }
        };
    }

    /**
     * This executor's host as Spark names it (its block manager's: what the UI and the scheduler show), or the
     * local host name before the block manager is up. Not PluginContext.hostname(): on an executor that reads
     * the RPC environment's own address, which a client-mode environment does not have.
     */
    public static String executorHost() {
        try {
            return org.apache.spark.SparkEnv.get().blockManager().blockManagerId().host();
        } catch (RuntimeException notYet) {
            return org.apache.spark.util.Utils.localHostName();
        }
    }

    /** {@value #PROMETHEUS}, refused naming the key when it is not a boolean. */
    static boolean prometheus(org.apache.spark.SparkConf conf) {
        try {
            return conf.getBoolean(PROMETHEUS, true);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(PROMETHEUS + "=" + conf.get(PROMETHEUS) + ": not a boolean; expected true or false", e);
        }
    }

    /** {@value #REPORT_INTERVAL} in milliseconds, at least 100. */
    public static long reportInterval(PluginContext context) {
        return Math.max(100, context.conf().getTimeAsMs(REPORT_INTERVAL, "1s"));
    }
}
