package org.rdmashuffle.hadoop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.jar.JarFile;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.service.Service;
import org.junit.jupiter.api.Test;


/**
 * The jar operators put on the NodeManager's classpath (and MapReduce's): it holds the service, the
 * consumer and the engine, its Netty and Kryo relocated; loaded beside Hadoop's jars with none of our
 * classes on the classpath, the service starts and opens its port.
 */
class YarnJarIT {
    private static final Path JAR = Path.of(System.getProperty("rdmashuffle.yarnJar", "missing"));

    @Test
    void theJarCarriesEverythingOfOurs_withNettyKryoAndPrometheusRelocated() throws Exception {
        assertTrue(Files.isRegularFile(JAR), "the shaded jar was built: " + JAR);
        List<String> unrelocated = new ArrayList<>();
        List<String> needingSpark = new ArrayList<>();
        try (JarFile jar = new JarFile(JAR.toFile())) {
            for (String name : Collections.list(jar.entries()).stream().map(e -> e.getName()).toList()) {
                if (name.endsWith(".class") && !name.startsWith("org/rdmashuffle/")) {
                    unrelocated.add(name);
                }
                if (name.endsWith(".class") && name.startsWith("org/rdmashuffle/spark/")) {
                    needingSpark.add(name);
                }
            }
            for (String needed : List.of("org/rdmashuffle/hadoop/RdmaShuffleService.class",
                    "org/rdmashuffle/hadoop/RdmaShuffleConsumerPlugin.class", "org/rdmashuffle/core/RdmaShuffleEngine.class",
                    "org/rdmashuffle/hadoop/RdmaSparkShuffleService.class",
                    "org/rdmashuffle/core/service/SparkShuffleServer.class",
                    "org/rdmashuffle/shaded/io/netty/channel/nio/NioIoHandler.class",
                    "org/rdmashuffle/shaded/com/esotericsoftware/kryo/Kryo.class",
                    "org/rdmashuffle/shaded/io/prometheus/metrics/expositionformats/PrometheusTextFormatWriter.class")) {
                assertTrue(jar.getEntry(needed) != null, "missing " + needed);
            }
        }
        assertEquals(List.of(), unrelocated.subList(0, Math.min(10, unrelocated.size())),
                "classes outside org.rdmashuffle would clash with the NodeManager's");
        assertEquals(List.of(), needingSpark, "Spark adapter classes need Spark, which a NodeManager does not have");
    }

    @Test
    void theServiceLoadsFromTheJarBesideHadoopAlone_andStarts() throws Exception {
        List<URL> urls = new ArrayList<>();
        urls.add(JAR.toUri().toURL());
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            boolean ours = e.contains("org/rdmashuffle/") || e.endsWith("/classes") || e.endsWith("/test-classes");
            if (!ours && !e.isEmpty()) {
                urls.add(Path.of(e).toUri().toURL()); // Hadoop, with its own (unrelocated) Netty
            }
        }
        ClassLoader before = Thread.currentThread().getContextClassLoader();
        try (URLClassLoader nodeManager = new URLClassLoader(urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader())) {
            Thread.currentThread().setContextClassLoader(nodeManager); // Hadoop's record factories load through it
            Class<?> type = nodeManager.loadClass(RdmaShuffleService.class.getName());
            assertTrue(type.getProtectionDomain().getCodeSource().getLocation().toString().endsWith("-yarn.jar"));
            Class<?> conf = nodeManager.loadClass(Configuration.class.getName());
            Object c = conf.getConstructor().newInstance();
            conf.getMethod("set", String.class, String.class).invoke(c, "mapreduce.shuffle.port", "0");
            conf.getMethod("set", String.class, String.class).invoke(c, HadoopSettings.SERVICE_PORT, "0");
            conf.getMethod("set", String.class, String.class).invoke(c, HadoopSettings.SERVICE_BIND_ADDRESS, "127.0.0.1");
            conf.getMethod("set", String.class, String.class).invoke(c, "rdma.shuffle.provider", "software");
            Object service = type.getConstructor().newInstance();
            Class<?> serviceType = nodeManager.loadClass(Service.class.getName());
            serviceType.getMethod("init", conf).invoke(service, c);
            serviceType.getMethod("start").invoke(service);
            try {
                Object address = type.getMethod("rdmaAddress").invoke(service);
                int port = ((java.net.InetSocketAddress) address).getPort();
                try (java.net.Socket s = new java.net.Socket("127.0.0.1", port)) {
                    assertTrue(s.isConnected(), "the service's port " + port + " accepts connections");
                }
            } finally {
                serviceType.getMethod("stop").invoke(service);
            }
        } finally {
            Thread.currentThread().setContextClassLoader(before);
        }
    }
}
