package org.rdmashuffle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.rdmashuffle.spark.metrics.PrometheusEndpoint;

/**
 * The driver's exposition on the driver's own UI (Spark in local mode, Spark's own shuffle manager: the
 * plugin reports the one executor as carried by Spark's transport): served at {@value PrometheusEndpoint#PATH}/
 * with the application's id as a label, and not served when {@code spark.shuffle.rdma.metrics.prometheus=false}.
 */
class PrometheusEndpointTest {
    private static SparkConf conf(String name) {
        return new SparkConf(false).setMaster("local[1]").setAppName(name).set("spark.plugins", RdmaShufflePlugin.class.getName())
                .set("spark.ui.enabled", "true").set("spark.ui.port", "0").set(RdmaShufflePlugin.REPORT_INTERVAL, "100ms");
    }

    private static HttpResponse<String> get(String url) throws Exception {
        return HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NORMAL).build().send(HttpRequest.newBuilder(URI.create(url))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void servedFromTheDriversUi_labelledByTheApplication_andNotWhenTurnedOff() throws Exception {
        try (JavaSparkContext sc = new JavaSparkContext(conf("exposition on"))) {
            String url = sc.sc().uiWebUrl().get() + PrometheusEndpoint.PATH; // without the '/': redirected to it
            String expected = "rdmashuffle_executors{application=\"" + sc.sc().applicationId() + "\",carrier=\"spark_transport\"} 1";
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            HttpResponse<String> r = get(url);
            while (!r.body().contains(expected) && System.nanoTime() < deadline) {
                Thread.sleep(100);
                r = get(url);
            }
            assertEquals(200, r.statusCode(), url);
            assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("text/plain; version=0.0.4"), r.headers().toString());
            assertTrue(r.body().contains(expected), "the executor's report, as Spark's transport, labelled by the application: " + r.body());
            assertTrue(r.body().contains("rdmashuffle_executors_fallen_back{application=\"" + sc.sc().applicationId()
                    + "\",reason=\"notConfigured\"} 1"), r.body());
        }
        try (JavaSparkContext sc = new JavaSparkContext(conf("exposition off").set(RdmaShufflePlugin.PROMETHEUS, "false"))) {
            HttpResponse<String> r = get(sc.sc().uiWebUrl().get() + PrometheusEndpoint.PATH + "/");
            assertEquals(404, r.statusCode(), "nothing served with " + RdmaShufflePlugin.PROMETHEUS + "=false: " + r.body());
        }
    }
}
