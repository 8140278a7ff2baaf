package org.rdmashuffle.benchmarks.cluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/** Where this checkout's scripts and built jars are, found from the working directory upward. */
final class Repository {
    private Repository() {
    }

    static Path root() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isExecutable(p.resolve("bin/cluster-bed")) && Files.isRegularFile(p.resolve("conf/spark-defaults.conf"))) {
                return p;
            }
        }
        throw new IllegalStateException("not inside an rdma-shuffle checkout (no bin/cluster-bed above "
                + Path.of("").toAbsolutePath() + ")");
    }

    /** The Spark plugin jar as users ship it: shuffle-spark's artifact ({@code mvn package} of shuffle-spark). */
    static Path pluginJar() {
        return built("shuffle-spark", "rdma-shuffle-spark-[0-9][0-9.]*(-SNAPSHOT)?\\.jar");
    }

    /** The NodeManager's jar as operators install it ({@code mvn package} of shuffle-hadoop). */
    static Path yarnJar() {
        return built("shuffle-hadoop", "rdma-shuffle-hadoop-.*-yarn\\.jar");
    }

    /** Hadoop 3.5's jars with Hadoop's own dependency versions ({@code mvn package} of hadoop-home). */
    static Path hadoopJars() {
        return root().resolve("hadoop-home/target/jars");
    }

    private static Path built(String module, String pattern) {
        Path target = root().resolve(module).resolve("target");
        try (Stream<Path> files = Files.exists(target) ? Files.list(target) : Stream.empty()) {
            return files.filter(f -> f.getFileName().toString().matches(pattern)).findFirst()
                    .orElseThrow(() -> new IllegalStateException("no " + pattern + " in " + target + ": build it with mvn -pl "
                            + module + " -am package -DskipTests"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
