package org.rdmashuffle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The way users deploy it: executors start with Spark alone on their classpath, and the plugin
 * arrives as one jar in {@code spark.jars} (as {@code --jars} gives it).
 */
class PluginJarTest {
    @TempDir
    Path scratch;

    @Test
    void pluginGivenAsOneJarInSparkJars_carriesTheShuffle() throws Exception {
        List<String> sparkOnly = new ArrayList<>();
        List<String> plugin = new ArrayList<>();
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            (SparkClusterSupport.isOurs(e) ? plugin : sparkOnly).add(e);
        }
        Path jar = assemble(plugin, scratch.resolve("rdma-shuffle-spark-plugin.jar"));
        SparkConf conf = SparkClusterSupport.conf("plugin jar", true, scratch)
                // Spark alone. This test's classes (the workload lambdas) travel in the jar too: classes on
                // the executor classpath cannot see classes of user jars.
                .set("spark.executor.extraClassPath", String.join(File.pathSeparator, sparkOnly))
                .set("spark.jars", jar.toUri().toString());
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            List<Integer> rows = Workloads.pairs(sc, 20_000, 100).groupByKey(4).mapValues(vs -> {
                int n = 0;
                for (String ignored : vs) {
                    n++;
                }
                return n;
            }).values().collect();
            assertEquals(20_000, rows.stream().mapToInt(Integer::intValue).sum());
            long[] counts = SparkClusterSupport.fetchCounts(sc);
            assertTrue(counts[0] > 0 && counts[1] == 0, "blocks over RDMA/built-in: " + counts[0] + "/" + counts[1] + " "
                    + SparkClusterSupport.describeExecutors(sc));
        }
    }

    /** One jar of the plugin's classes, from the build's class directories or jars. */
    private static Path assemble(List<String> entries, Path out) throws IOException {
        Set<String> seen = new HashSet<>();
        try (JarOutputStream jar = new JarOutputStream(Files.newOutputStream(out))) {
            for (String e : entries) {
                Path p = Path.of(e);
                if (Files.isDirectory(p)) {
                    try (Stream<Path> files = Files.walk(p)) {
                        for (Path f : files.filter(Files::isRegularFile).toList()) {
                            add(jar, seen, p.relativize(f).toString().replace(File.separatorChar, '/'), Files.newInputStream(f));
                        }
                    }
                } else if (e.endsWith(".jar")) {
                    try (JarFile in = new JarFile(e)) {
                        for (JarEntry j : java.util.Collections.list(in.entries())) {
                            if (!j.isDirectory() && !j.getName().startsWith("META-INF/")) {
                                add(jar, seen, j.getName(), in.getInputStream(j));
                            }
                        }
                    }
                }
            }
        }
        return out;
    }

    private static void add(JarOutputStream jar, Set<String> seen, String name, InputStream in) throws IOException {
        try (in) {
            if (!seen.add(name)) {
                return;
            }
            jar.putNextEntry(new JarEntry(name));
            in.transferTo((OutputStream) jar);
            jar.closeEntry();
        }
    }
}
