package org.rdmashuffle.benchmarks.cluster;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

import org.apache.spark.network.yarn.YarnShuffleService;

/**
 * The bed's stand-in for Spark's YARN shuffle jar ({@link YarnShuffleService}, this module's test
 * class of Spark's name) as a jar: with Spark's jars beside it, it takes the place the shipped
 * yarn-site.xml gives {@code /opt/spark/yarn/spark-<version>-yarn-shuffle.jar}.
 */
final class StandInSparkService {
    private StandInSparkService() {
    }

    static Path jar(Path dir) throws IOException {
        Path classes;
        try {
            classes = Path.of(YarnShuffleService.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IOException(e);
        }
        Path pkg = classes.resolve("org/apache/spark/network/yarn");
        Path jar = dir.resolve("stand-in-spark-yarn-shuffle.jar");
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar)); Stream<Path> files = Files.list(pkg)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".class")).sorted().toList()) {
                out.putNextEntry(new JarEntry(classes.relativize(f).toString()));
                Files.copy(f, out);
                out.closeEntry();
            }
        }
        return jar;
    }
}
