package org.rdmashuffle.benchmarks.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import org.apache.spark.metrics.sink.StatsdSink;
import org.junit.jupiter.api.Test;

/** The plugin's registered-memory gauges, sent by Spark's own StatsD sink as settings() configures it, received per executor. */
class PluginGaugesTest {
    private static final String PLUGIN = ".plugin.org.rdmashuffle.spark.RdmaShufflePlugin.";

    @Test
    void sparksSink_configuredAsTheSettingsSay_sendsTheTwoGaugesOnly_andEachExecutorsPeakIsKept() throws Exception {
        try (PluginGauges gauges = PluginGauges.open("127.0.0.1")) {
            Map<String, String> settings = gauges.settings();
            Properties sink = new Properties();
            String prefix = "spark.metrics.conf.executor.sink.statsd.";
            settings.forEach((k, v) -> {
                assertTrue(k.startsWith(prefix), k);
                sink.setProperty(k.substring(prefix.length()), v);
            });
            assertEquals("org.apache.spark.metrics.sink.StatsdSink", sink.remove("class"));
            // An executor's registry as Spark's metrics system names it: <app id>.<executor id>.<source>.<name>.
            AtomicLong registered = new AtomicLong(50L << 20);
            MetricRegistry one = new MetricRegistry();
            one.register("app-20261203061500-0001.1" + PLUGIN + "registeredBytes", (Gauge<Long>) registered::get);
            one.register("app-20261203061500-0001.1" + PLUGIN + "fetch.bufferBytes", (Gauge<Long>) () -> 64L << 20);
            one.register("app-20261203061500-0001.1" + PLUGIN + "rdma.bytes", (Gauge<Long>) () -> 999L); // not one of the two
            one.register("app-20261203061500-0001.1.executor.bytesRead", (Gauge<Long>) () -> 7L);
            MetricRegistry two = new MetricRegistry();
            two.register("app-20261203061500-0001.2" + PLUGIN + "registeredBytes", (Gauge<Long>) () -> 10L << 20);
            two.register("app-20261203061500-0001.2" + PLUGIN + "fetch.bufferBytes", (Gauge<Long>) () -> 4L << 20);
            StatsdSink first = new StatsdSink(sink, one);
            StatsdSink second = new StatsdSink(sink, two);
            first.report();
            registered.set(120L << 20); // the peak
            first.report();
            registered.set(30L << 20);
            first.report();
            second.report();
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (gauges.figures().values().stream().mapToInt(PluginGauges.Executor::values).sum() < 8 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            Map<String, PluginGauges.Executor> figures = gauges.finish(200);
            assertEquals(Map.of("1", new PluginGauges.Executor("1", 120L << 20, 64L << 20, 6),
                    "2", new PluginGauges.Executor("2", 10L << 20, 4L << 20, 2)), figures);
            assertEquals(8, gauges.datagrams()); // the sink's filter let nothing else through
        }
    }

    @Test
    void linesOfOtherMetrics_orOfNoNumber_areIgnored() throws Exception {
        try (PluginGauges gauges = PluginGauges.open("127.0.0.1")) {
            gauges.accept("app-1.3" + PLUGIN + "registeredBytes:4096|g\napp-1.3" + PLUGIN + "rdma.bytes:5|g\n"
                    + "app-1.3" + PLUGIN + "registeredBytes:lots|g\napp-1.3.executor.registeredBytes:77|g");
            assertEquals(Map.of("3", new PluginGauges.Executor("3", 4096, 0, 1)), gauges.figures());
        }
    }
}
