package org.rdmashuffle.benchmarks.cluster;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;

import org.junit.jupiter.api.Test;

/**
 * Bad input an operator makes: conf/yarn-site.xml installed on a node whose {@code -yarn} jar is not
 * where {@code aux-services.mapreduce_shuffle.classpath} says. The NodeManager must not come up
 * half-serving: it exits at start, and its log names the service's class, so the operator knows what
 * to install; the cluster's start fails at once rather than waiting for a node that will not register.
 */
class NodeManagerWithoutTheYarnJarTest {
    @Test
    void aNodeManagerWhoseYarnJarIsMissing_exitsAtStart_namingTheServiceClassItCouldNotLoad() throws Exception {
        BedSupport.requireBed();
        Path run = Files.createDirectories(Repository.root().resolve("benchmarks/target/yarn-runs")
                .resolve(LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + "-no-yarn-jar"));
        Path missing = run.resolve("not-installed/" + Repository.yarnJar().getFileName());
        HadoopHome home = HadoopHome.create(run.resolve("hadoop-home"), Repository.hadoopJars(), missing);
        String prefix;
        try (ClusterBed bed = ClusterBed.start(4, null)) {
            prefix = bed.namespacePrefix();
            IOException failed = assertThrows(IOException.class, () -> YarnCluster.start(bed, home, run).close());
            assertTrue(failed.getMessage().contains("exited while the cluster started"), failed.getMessage());
            boolean named = false;
            for (ClusterBed.Host node : bed.hosts().subList(2, bed.hosts().size())) {
                Path log = run.resolve("logs/nodemanager-" + node.address() + ".log");
                String text = Files.exists(log) ? Files.readString(log) : "";
                named |= text.contains("org.rdmashuffle.hadoop.RdmaShuffleService") && text.contains("ClassNotFoundException");
            }
            assertTrue(named, "a NodeManager's log names the class it could not load: " + run.resolve("logs"));
        }
        BedSupport.assertNothingLeft(prefix, run);
    }
}
