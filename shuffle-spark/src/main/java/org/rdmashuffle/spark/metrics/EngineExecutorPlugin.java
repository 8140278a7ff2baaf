package org.rdmashuffle.spark.metrics;

import java.util.Map;

import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.rdmashuffle.spark.EngineShuffleManager;
import org.rdmashuffle.spark.RdmaShuffleManager;
import org.rdmashuffle.spark.RdmaShufflePlugin;

/**
 * The executor's side of {@link RdmaShufflePlugin} on a JVM that runs the engine: this executor's
 * figures in its metrics registry and its reports to the driver ({@link ExecutorShuffleMetrics}).
 * Made by name by {@link RdmaShufflePlugin}, which is built for an older Java than this class.
 */
public final class EngineExecutorPlugin implements ExecutorPlugin {
    private ExecutorShuffleMetrics metrics;

    @Override
    public void init(PluginContext context, Map<String, String> extraConf) {
        metrics = new ExecutorShuffleMetrics(context.metricRegistry(), context.executorID(),
                (id, seq) -> RdmaShuffleManager.report(id, seq).on(RdmaShufflePlugin.executorHost()),
                EngineShuffleManager::engineMetrics, message -> {
                    try {
                        context.send(message);
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }, RdmaShufflePlugin.reportInterval(context));
    }

    @Override
    public void shutdown() {
        if (metrics != null) {
            metrics.close();
        }
    }
}
