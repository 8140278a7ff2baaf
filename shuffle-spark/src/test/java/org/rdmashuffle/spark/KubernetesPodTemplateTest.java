package org.rdmashuffle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import org.apache.spark.SecurityManager;
import org.apache.spark.SparkConf;
import org.apache.spark.deploy.k8s.KubernetesConf;
import org.apache.spark.deploy.k8s.KubernetesExecutorConf;
import org.apache.spark.deploy.k8s.KubernetesExecutorSpec;
import org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBuilder;
import org.junit.jupiter.api.Test;
import scala.Option;

/**
 * conf/kubernetes as shipped, through Spark's own Kubernetes code (spark-kubernetes 4.2): the executor
 * pod a driver would ask the API server for, built by {@link KubernetesExecutorBuilder} from
 * spark-defaults-k8s.conf and the executor pod template, keeps what the template adds for RDMA (the
 * device plugin's resource beside Spark's own memory and CPU, IPC_LOCK, the RDMA network) and gets what
 * the engine needs from Spark (the application's secret, the JVM option). No cluster is involved: the
 * builder only reads the template.
 */
class KubernetesPodTemplateTest {
    private static final Path CONF = Path.of("../conf/kubernetes");

    @Test
    void sparksExecutorPodBuilder_keepsTheTemplatesDeviceCapabilityAndNetwork_andAddsTheSecretTheEnginesUse() throws Exception {
        SparkConf conf = new SparkConf(false).setMaster("k8s://https://kubernetes.invalid:6443").setAppName("rdma-shuffle-pod")
                .set("spark.app.id", "spark-0123456789").set("spark.kubernetes.container.image", "apache/spark:4.2.0")
                .set("spark.kubernetes.namespace", "spark").set("spark.executor.memory", "4g").set("spark.executor.cores", "2");
        Map<String, String> shipped = sparkDefaults(CONF.resolve("spark-defaults-k8s.conf"));
        shipped.forEach(conf::set);
        // The shipped path is where an image would put it; here it is the file in this repository.
        String templatePath = shipped.get("spark.kubernetes.executor.podTemplateFile");
        assertEquals("executor-pod-template.yaml", Path.of(templatePath).getFileName().toString(),
                "spark-defaults-k8s.conf names the template conf/kubernetes ships");
        conf.set("spark.kubernetes.executor.podTemplateFile", CONF.resolve("executor-pod-template.yaml").toAbsolutePath().toString());

        SecurityManager security = new SecurityManager(conf, Option.empty(), SecurityManager.$lessinit$greater$default$3());
        security.initializeAuth(); // on Kubernetes Spark makes the application's secret itself
        KubernetesExecutorConf executorConf = KubernetesConf.createExecutorConf(conf, "1", "spark-0123456789", Option.empty(), 0);
        KubernetesExecutorSpec spec;
        try (KubernetesClient client = new KubernetesClientBuilder().build()) {
            spec = new KubernetesExecutorBuilder().buildFromFeatures(executorConf, security, client,
                    org.apache.spark.resource.ResourceProfile$.MODULE$.getOrCreateDefaultProfile(conf));
        } finally {
            // Spark caches the default profile JVM-wide (SparkContext.stop clears it): left here, this
            // test's 4g executors would be what the next local-cluster context in this JVM asks its
            // 1 GiB workers for, and no executor would ever come up.
            org.apache.spark.resource.ResourceProfile$.MODULE$.clearDefaultProfile();
        }
        Pod pod = spec.pod().pod();
        Container executor = spec.pod().container();

        assertEquals("spark-executor", executor.getName(), "the template's container is the one Spark runs the executor in");
        assertEquals("apache/spark:4.2.0", executor.getImage(), "Spark's settings are applied on top of the template");
        Map<String, Quantity> limits = executor.getResources().getLimits();
        assertEquals(new Quantity("1"), limits.get("rdma/hca_shared_devices_a"), "the device plugin's resource: " + limits);
        assertTrue(limits.containsKey("memory"), "Spark's own memory limit beside it: " + limits);
        assertTrue(executor.getSecurityContext().getCapabilities().getAdd().contains("IPC_LOCK"),
                "IPC_LOCK: " + executor.getSecurityContext());
        assertEquals("rdma-net", pod.getMetadata().getAnnotations().get("k8s.v1.cni.cncf.io/networks"),
                "the RDMA network's attachment: " + pod.getMetadata().getAnnotations());

        Map<String, String> env = new LinkedHashMap<>();
        for (EnvVar e : executor.getEnv()) {
            env.put(e.getName(), e.getValue());
        }
        String secret = env.get(SecurityManager.ENV_AUTH_SECRET());
        assertTrue(secret != null && !secret.isEmpty(),
                "the executor gets the application's secret (the engines authenticate with it): " + env.keySet());
        assertEquals(security.getSecretKey(), secret);
        assertTrue(env.values().stream().anyMatch(v -> v != null && v.contains("--enable-native-access=ALL-UNNAMED")),
                "the executor JVM's option: " + env);
    }

    @Test
    void theShippedSettings_needNoSecretOfTheirOwn_andSwitchThePluginAndShuffleTrackingOn() throws Exception {
        Map<String, String> shipped = sparkDefaults(CONF.resolve("spark-defaults-k8s.conf"));
        assertEquals(RdmaShuffleManager.class.getName(), shipped.get("spark.shuffle.manager"));
        assertEquals("true", shipped.get("spark.authenticate"));
        assertFalse(shipped.containsKey("spark.authenticate.secret"), "Kubernetes makes a secret per application");
        // No external shuffle service on Kubernetes: dynamic allocation must track shuffles instead.
        assertEquals("true", shipped.get("spark.dynamicAllocation.shuffleTracking.enabled"));
        assertFalse("true".equals(shipped.get("spark.shuffle.service.enabled")));
    }

    /** A spark-defaults file: "key value" lines, # comments. */
    static Map<String, String> sparkDefaults(Path file) throws IOException {
        Map<String, String> out = new LinkedHashMap<>();
        for (String line : Files.readAllLines(file)) {
            String l = line.strip();
            if (l.isEmpty() || l.startsWith("#")) {
                continue;
            }
            String[] kv = l.split("\\s+", 2);
            if (kv.length != 2) {
                throw new AssertionError(file + ": a line without a value: " + line);
            }
            out.put(kv[0], kv[1]);
        }
        return out;
    }
}
