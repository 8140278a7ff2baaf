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

    /** The Spark plugin jar as users ship it ({@code mvn package} of shuffle-spark). */
    static Path pluginJar() {
        Path target = root().resolve("shuffle-spark/target");
        try (Stream<Path> files = Files.exists(target) ? Files.list(target) : Stream.empty()) {
            return files.filter(f -> f.getFileName().toString().matches("rdma-shuffle-spark-.*-plugin\\.jar")).findFirst()
                    .orElseThrow(() -> new IllegalStateException("no rdma-shuffle-spark-*-plugin.jar in " + target
                            + ": build it with mvn -pl shuffle-spark -am package -DskipTests"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
