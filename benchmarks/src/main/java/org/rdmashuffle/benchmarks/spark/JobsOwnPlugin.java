package org.rdmashuffle.benchmarks.spark;

import java.util.Map;
import java.util.TreeMap;

import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * A plugin of the job's own, standing for RAPIDS, Gluten or a profiler's agent, for the test that the
 * shipped confs add to a job's settings instead of replacing them (MainJobFromTheReleaseTarballTest). Each
 * executor tells the driver what it sees: the job's own Java option {@value #OWN_OPTION} (given with
 * {@code spark.executor.extraJavaOptions}) and whether native access is enabled (which only the shipped
 * {@code spark.executor.defaultJavaOptions} give). The driver prints one line, {@value #LINE}..., when
 * the application stops.
 */
public final class JobsOwnPlugin implements SparkPlugin {
    /** The system property the job sets on its driver and executors with extraJavaOptions. */
    public static final String OWN_OPTION = "rdmashuffle.jobsOwnOption";
    public static final String LINE = "job's own plugin:";

    @Override
    public DriverPlugin driverPlugin() {
        return new DriverPlugin() {
            private final Map<String, String> executors = new TreeMap<>();

            @Override
            public Map<String, String> init(SparkContext sc, PluginContext ctx) {
                return Map.of();
            }

            @Override
            public Object receive(Object message) {
                String[] idAndSeen = String.valueOf(message).split(" ", 2);
                synchronized (executors) {
                    executors.put(idAndSeen[0], idAndSeen.length > 1 ? idAndSeen[1] : "");
                }
                return "ok";
            }

            @Override
            public void shutdown() {
                synchronized (executors) {
                    System.out.println(LINE + " driver " + seen() + "; executors " + executors);
                }
            }
        };
    }

    @Override
    public ExecutorPlugin executorPlugin() {
        return new ExecutorPlugin() {
            @Override
            public void init(PluginContext ctx, Map<String, String> extraConf) {
                try { // ask, not send: the driver has the report before this executor runs a task
                    ctx.ask(ctx.executorID() + " " + seen());
                } catch (Exception e) {
                    throw new IllegalStateException("the job's own plugin could not report to the driver", e);
                }
            }
        };
    }

    /** "option=<value> nativeAccess=<true|false>" in this JVM. */
    static String seen() {
        return "option=" + System.getProperty(OWN_OPTION, "") + " nativeAccess="
                + JobsOwnPlugin.class.getModule().isNativeAccessEnabled();
    }
}
