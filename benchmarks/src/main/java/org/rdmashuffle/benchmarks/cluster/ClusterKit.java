package org.rdmashuffle.benchmarks.cluster;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Lays out, on this machine, what Spark processes on other machines that see this file system need:
 * a Spark home ({@link SparkHome}: Spark's jars, conf as shipped with a fresh secret) and the main
 * job's application jar. The Soft-RoCE guests of {@code guest-tests.sh --pair} use it: they see the
 * host's / read-only, so the installation is made once here, where Java is fast.
 *
 * <pre>  ClusterKit DIR</pre>
 */
public final class ClusterKit {
    private ClusterKit() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: ClusterKit DIR");
            System.exit(2);
        }
        Path dir = Files.createDirectories(Path.of(args[0]).toAbsolutePath());
        SparkHome home = SparkHome.create(dir.resolve("spark-home"), Repository.pluginJar());
        Path app = ClusterRun.appJar(dir.resolve("rdma-shuffle-benchmarks-app.jar"));
        System.out.println("SPARK_HOME=" + home.dir());
        System.out.println("APP_JAR=" + app);
    }
}
