package org.rdmashuffle.spark;

import java.util.Map;

import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;
import org.rdmashuffle.spark.metrics.DriverShuffleMetrics;
import org.rdmashuffle.spark.metrics.FallbackReporter;
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
    /** The executor's side where the engine runs, built for the engine's Java. */
    static final String ENGINE_EXECUTOR_PLUGIN = "org.rdmashuffle.spark.metrics.EngineExecutorPlugin";

    @Override
    public DriverPlugin driverPlugin() {
        return new DriverPlugin() {
            private volatile DriverShuffleMetrics metrics;

            @Override
            public Map<String, String> init(SparkContext sc, PluginContext context) {
                metrics = new DriverShuffleMetrics(context.metricRegistry(), sc.conf().getBoolean(PER_LINK, false));
                return Map.of();
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
            return EngineRuntime.load(ExecutorPlugin.class, RdmaShufflePlugin.class, ENGINE_EXECUTOR_PLUGIN, new Class<?>[0]);
        }
        return new ExecutorPlugin() {
            private FallbackReporter reporter;

            @Override
            public void init(PluginContext context, Map<String, String> extraConf) {
                reporter = new FallbackReporter(context, RdmaShuffleManager::report, reportInterval(context));
            }

            @Override
            public void shutdown() {
                if (reporter != null) {
                    reporter.close();
                }
            }
        };
    }

    /** {@value #REPORT_INTERVAL} in milliseconds, at least 100. */
    public static long reportInterval(PluginContext context) {
        return Math.max(100, context.conf().getTimeAsMs(REPORT_INTERVAL, "1s"));
    }
}
