package org.rdmashuffle.benchmarks.cluster;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A Spark installation as an operator has one: {@code jars/} holding Spark's jars (links to the ones
 * Maven resolved; none of this project's), a {@code RELEASE} file, and {@code conf/} with
 * {@code spark-defaults.conf} made from the project's {@code conf/spark-defaults.conf} as shipped, with
 * only the install path of the plugin jar and the cluster's secret filled in. Processes are started
 * the way {@code bin/spark-class} starts them: Spark's launcher ({@code org.apache.spark.launcher.Main})
 * builds the command, so daemon memory, module options, {@code spark.driver.defaultJavaOptions} and the
 * classpath are Spark's own choices.
 */
public final class SparkHome {
    /** The line of the shipped conf that a standalone cluster must fill with its own secret. */
    static final String SECRET_PLACEHOLDER = "REPLACE-ME-with-openssl-rand-hex-32";

    private final Path dir;
    private final String java;

    private SparkHome(Path dir) {
        this.dir = dir;
        this.java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /**
     * Lays out a Spark home in {@code dir} from this JVM's classpath (Spark and its dependencies; this
     * project's modules are left out: the plugin reaches executors through {@code spark.jars} only).
     */
    public static SparkHome create(Path dir, Path pluginJar) throws IOException {
        return create(dir, pluginJar, "spark-defaults.conf");
    }

    /**
     * The same with another of the project's shipped confs as {@code spark-defaults.conf}, e.g.
     * {@code spark-defaults-yarn.conf} (on YARN the secret is made per application: nothing to fill).
     */
    public static SparkHome create(Path dir, Path pluginJar, String shippedConf) throws IOException {
        return create(dir, pluginJar, Repository.root().resolve("conf").resolve(shippedConf));
    }

    /** The same with the shipped conf at {@code shippedConf}, e.g. the one in an unpacked release tarball. */
    public static SparkHome create(Path dir, Path pluginJar, Path shippedConf) throws IOException {
        Path jars = Files.createDirectories(dir.resolve("jars"));
        Path root = Repository.root();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path jar = Path.of(entry).toAbsolutePath();
            if (!entry.endsWith(".jar") || jar.startsWith(root) || entry.contains("/org/rdmashuffle/")) {
                continue;
            }
            Path link = jars.resolve(jar.getFileName());
            if (!Files.exists(link, LinkOption.NOFOLLOW_LINKS)) {
                Files.createSymbolicLink(link, jar);
            }
        }
        Files.writeString(dir.resolve("RELEASE"), "Spark 4.2 jars from the Maven build (rdma-shuffle cluster bed)\n");
        Path conf = Files.createDirectories(dir.resolve("conf"));
        byte[] key = new byte[32];
        new SecureRandom().nextBytes(key);
        String secret = HexFormat.of().formatHex(key);
        Files.writeString(conf.resolve("spark-defaults.conf"), defaults(shippedConf, pluginJar, secret));
        // The secret is in there: readable by the Spark user only, as docs/spark.md asks.
        Files.setPosixFilePermissions(conf.resolve("spark-defaults.conf"), PosixFilePermissions.fromString("rw-------"));
        Files.writeString(conf.resolve("log4j2.properties"), """
                rootLogger.level = info
                rootLogger.appenderRef.stderr.ref = console
                appender.console.type = Console
                appender.console.name = console
                appender.console.target = SYSTEM_ERR
                appender.console.layout.type = PatternLayout
                appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n
                """);
        return new SparkHome(dir);
    }

    /** The shipped conf with the plugin's install path and the cluster's secret filled in; nothing else changes. */
    static String defaults(Path shipped, Path pluginJar, String secret) throws IOException {
        String text = Files.readString(shipped);
        if (!text.contains(SECRET_PLACEHOLDER) && text.contains("spark.authenticate.secret")) {
            throw new IllegalStateException(shipped + " has no " + SECRET_PLACEHOLDER + " line to fill");
        }
        StringBuilder out = new StringBuilder();
        for (String line : text.split("\n", -1)) {
            if (line.startsWith("spark.jars ")) {
                line = line.replaceFirst("\\S+$", pluginJar.toAbsolutePath().toString());
            }
            out.append(line.replace(SECRET_PLACEHOLDER, secret)).append('\n');
        }
        return out.toString();
    }

    public Path dir() {
        return dir;
    }

    /** The environment every process of this installation gets (plus its host's address). */
    Map<String, String> environment(String localIp) {
        Map<String, String> env = new HashMap<>();
        env.put("SPARK_HOME", dir.toString());
        env.put("SPARK_CONF_DIR", dir.resolve("conf").toString());
        env.put("SPARK_SCALA_VERSION", "2.13");
        env.put("JAVA_HOME", System.getProperty("java.home"));
        env.put("SPARK_LOCAL_IP", localIp);
        env.put("SPARK_DAEMON_MEMORY", "384m");
        return env;
    }

    /**
     * What {@code bin/spark-class CLASS ARGS} would run: Spark's launcher prints the command
     * (NUL-separated, after a NUL line), as the script reads it.
     */
    List<String> command(String className, List<String> args, Map<String, String> env) throws IOException,
            InterruptedException {
        // The launcher only prints a command and exits: C1 and the serial collector, nothing of it to optimize.
        List<String> launcher = new ArrayList<>(List.of(java, "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                "-cp", dir.resolve("jars") + "/*", "org.apache.spark.launcher.Main", className));
        launcher.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(launcher).redirectError(ProcessBuilder.Redirect.INHERIT);
        pb.environment().putAll(env);
        Process p = pb.start();
        p.getOutputStream().close();
        // Read on the side, so a launcher that hangs cannot hold us past the bound below.
        CompletableFuture<byte[]> printed = CompletableFuture.supplyAsync(() -> {
            try (InputStream in = p.getInputStream()) {
                return in.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }, Thread::startVirtualThread);
        byte[] out;
        try {
            out = printed.get(60, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            p.destroyForcibly();
            throw new IOException("Spark's launcher did not print the command for " + className + " in 60 s", e);
        }
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            p.destroyForcibly();
            throw new IOException("Spark's launcher could not build the command for " + className + " (exit "
                    + (p.isAlive() ? "none in 60 s" : p.exitValue()) + ")");
        }
        String text = new String(out, StandardCharsets.UTF_8);
        int start = text.indexOf("\0\n");
        if (start < 0) {
            throw new IOException("Spark's launcher printed no command for " + className + ": " + text);
        }
        List<String> command = new ArrayList<>();
        for (String token : text.substring(start + 2).split("\0")) {
            if (!token.isEmpty()) {
                command.add(token);
            }
        }
        return command;
    }
}
