package org.rdmashuffle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

import javax.tools.ToolProvider;
import javax.xml.parsers.DocumentBuilderFactory;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * The module's artifact as a Spark application gets it: the jar and the POM the build publishes
 * (shuffle-spark/pom.xml), laid out as a Maven repository in a directory, resolved by spark-submit's
 * own Ivy from {@code spark.jars.packages} into an application whose classpath has Spark alone. The
 * job runs on a local cluster of two executors, and its shuffle goes over the plugin's engine. Nothing
 * reaches the network: Ivy's settings name that directory as the only repository.
 */
class PluginArtifactIT {
    private static final Path JAR = Path.of(System.getProperty("rdmashuffle.artifactJar", "missing"));
    private static final Path POM = Path.of(System.getProperty("rdmashuffle.artifactPom", "missing"));
    private static final String GROUP = System.getProperty("rdmashuffle.groupId");
    private static final String ARTIFACT = System.getProperty("rdmashuffle.artifactId");
    private static final String VERSION = System.getProperty("rdmashuffle.version");

    static final String JOB = """
            import java.util.*;
            import org.apache.spark.*;
            import org.apache.spark.api.java.*;
            import scala.Tuple2;

            public class PackagesJob {
                public static void main(String[] args) throws Exception {
                    try (JavaSparkContext sc = new JavaSparkContext(new SparkConf())) {
                        long deadline = System.nanoTime() + 120_000_000_000L;
                        // Both executors up before the maps: each then writes some, and each reducer fetches remote blocks.
                        while (sc.statusTracker().getExecutorInfos().length < 3) { // the driver counts as one
                            if (System.nanoTime() > deadline) {
                                throw new IllegalStateException("the executors did not come up");
                            }
                            Thread.sleep(100);
                        }
                        List<Integer> xs = new ArrayList<>();
                        for (int i = 0; i < 20000; i++) {
                            xs.add(i);
                        }
                        long sum = sc.parallelize(xs, 8).mapToPair(i -> new Tuple2<>(i % 97, (long) i))
                                .reduceByKey(Long::sum, 6).values().reduce(Long::sum);
                        System.out.println("sum=" + sum);
                        System.out.println("manager=" + sc.env().shuffleManager().getClass().getName());
                        var gauges = sc.env().metricsSystem()
                                .getSourcesByName("plugin.org.rdmashuffle.spark.RdmaShufflePlugin").head().metricRegistry()
                                .getGauges();
                        // Executors report once a second: wait for the reports that count this job's blocks.
                        while (System.nanoTime() < deadline && !(Long.valueOf(2).equals(gauges.get("executors.onSoftwareProvider").getValue())
                                && ((Long) gauges.get("softwareProvider.blocks").getValue()) > 0)) {
                            Thread.sleep(200);
                        }
                        for (String g : List.of("executors.onSoftwareProvider", "executors.onRdma", "executors.fallenBack",
                                "softwareProvider.blocks", "rdma.blocks", "fallback.blocks")) {
                            System.out.println(g + "=" + gauges.get(g).getValue());
                        }
                    }
                }
            }
            """;

    @Test
    void thePublishedPom_standsAlone_andNamesOnlySparkAsProvided() throws Exception {
        Document pom = parse(POM);
        Element project = pom.getDocumentElement();
        assertEquals(0, project.getElementsByTagName("parent").getLength(), "a parent POM would be one more download, and its "
                + "imported BOMs more: " + POM);
        assertEquals(GROUP, child(project, "groupId"));
        assertEquals(ARTIFACT, child(project, "artifactId"));
        assertEquals(VERSION, child(project, "version"));
        NodeList deps = project.getElementsByTagName("dependency");
        assertTrue(deps.getLength() > 0, "Spark, provided, is named: " + POM);
        for (int i = 0; i < deps.getLength(); i++) {
            Element d = (Element) deps.item(i);
            String id = child(d, "groupId") + ":" + child(d, "artifactId");
            assertEquals("org.apache.spark", child(d, "groupId"), id + ": only Spark, which the cluster provides; ours are inside the jar");
            assertEquals("provided", child(d, "scope"), id);
        }
        assertEquals(0, project.getElementsByTagName("build").getLength(), "no build section is published");
    }

    /**
     * The Prometheus client the driver's exposition writes with is inside the jar, relocated under
     * org.rdmashuffle.shaded (an application's own client never meets it), and the exposition runs from the
     * jar with Spark alone beside it: its classes name the relocated client, not io.prometheus.
     */
    @Test
    void thePrometheusClient_isShadedRelocated_andTheExpositionRunsFromTheJarAlone() throws Exception {
        List<String> names = new ArrayList<>();
        try (java.util.jar.JarFile jar = new java.util.jar.JarFile(JAR.toFile())) {
            jar.stream().forEach(e -> names.add(e.getName()));
        }
        assertTrue(names.contains("org/rdmashuffle/shaded/io/prometheus/metrics/expositionformats/PrometheusTextFormatWriter.class"),
                "the relocated text writer is in the jar");
        assertTrue(names.stream().noneMatch(n -> n.startsWith("io/prometheus/")), "no unrelocated io/prometheus class in the jar");
        List<java.net.URL> urls = new ArrayList<>(List.of(JAR.toUri().toURL()));
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (!SparkClusterSupport.isOurs(e)) {
                urls.add(Path.of(e).toUri().toURL());
            }
        }
        try (java.net.URLClassLoader alone = new java.net.URLClassLoader(urls.toArray(new java.net.URL[0]),
                ClassLoader.getPlatformClassLoader())) {
            assertTrue(alone.loadClass("org.rdmashuffle.spark.metrics.PrometheusExposition").getProtectionDomain().getCodeSource()
                    .getLocation().toString().endsWith(".jar"), "the exposition comes from the artifact");
            Class<?> registry = alone.loadClass("com.codahale.metrics.MetricRegistry");
            Class<?> driver = alone.loadClass("org.rdmashuffle.spark.metrics.DriverShuffleMetrics");
            Object metrics = driver.getConstructor(registry, boolean.class).newInstance(registry.getConstructor().newInstance(), false);
            Object exposition = alone.loadClass("org.rdmashuffle.spark.metrics.PrometheusExposition")
                    .getConstructor(String.class, driver).newInstance("app-1", metrics);
            String text = (String) exposition.getClass().getMethod("scrape").invoke(exposition);
            assertTrue(text.contains("rdmashuffle_executors{application=\"app-1\",carrier=\"rdma_device\"} 0"), text);
        }
    }

    @Test
    void sparkJarsPackages_resolvesTheArtifactFromAMavenRepository_andItsShuffleGoesOverTheEngine(@TempDir Path dir) throws Exception {
        assertTrue(Files.isRegularFile(JAR), "the artifact was built: " + JAR);
        Path repo = deploy(dir.resolve("repo"));
        Path ivySettings = Files.writeString(dir.resolve("ivysettings.xml"), """
                <ivysettings>
                  <settings defaultResolver="only-this-repository"/>
                  <resolvers>
                    <ibiblio name="only-this-repository" m2compatible="true" usepoms="true" root="%s"/>
                  </resolvers>
                </ivysettings>
                """.formatted(repo.toUri()));

        List<String> sparkOnly = new ArrayList<>();
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (!SparkClusterSupport.isOurs(e)) {
                sparkOnly.add(e);
            }
        }
        String classpath = String.join(File.pathSeparator, sparkOnly);
        Path job = compileJob(dir, classpath);

        Path home = Files.createDirectories(dir.resolve("spark-home"));
        Files.createDirectories(home.resolve("jars"));
        Files.createFile(home.resolve("RELEASE"));
        Path ivy = dir.resolve("ivy");
        String coordinates = GROUP + ":" + ARTIFACT + ":" + VERSION;
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx512m"));
        command.addAll(List.of(System.getProperty("rdmashuffle.moduleOptions", "").trim().split("\\s+")));
        command.addAll(List.of("-cp", classpath, "org.apache.spark.deploy.SparkSubmit",
                "--master", SparkClusterSupport.MASTER,
                "--conf", "spark.jars.packages=" + coordinates,
                "--conf", "spark.jars.repositories=" + repo.toUri(),
                "--conf", "spark.jars.ivy=" + ivy,
                "--conf", "spark.jars.ivySettings=" + ivySettings,
                "--conf", "spark.shuffle.manager=org.rdmashuffle.spark.RdmaShuffleManager",
                "--conf", "spark.plugins=org.rdmashuffle.spark.RdmaShufflePlugin",
                "--conf", "spark.shuffle.rdma.provider=software",
                "--conf", "spark.shuffle.rdma.fetchBufferMemory=64m",
                "--conf", "spark.shuffle.rdma.srq.buffers=64",
                "--conf", "spark.home=" + home,
                "--conf", "spark.local.dir=" + Files.createDirectories(dir.resolve("local")),
                "--conf", "spark.driver.host=127.0.0.1",
                "--conf", "spark.driver.bindAddress=127.0.0.1",
                "--conf", "spark.ui.enabled=false",
                "--conf", "spark.executor.extraClassPath=" + classpath,
                "--conf", "spark.executor.extraJavaOptions=--enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow",
                "--conf", "spark.executorEnv.SPARK_SCALA_VERSION=2.13",
                "--conf", "spark.executorEnv.SPARK_LOCAL_IP=127.0.0.1",
                "--conf", "spark.executorEnv.JAVA_HOME=" + System.getProperty("java.home"),
                "--class", "PackagesJob", job.toString()));
        command.removeIf(String::isEmpty);
        Path log = dir.resolve("submit.log");
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put("SPARK_HOME", home.toString());
        pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
        pb.environment().remove("SPARK_CONF_DIR");
        Process p = pb.start();
        boolean ended = p.waitFor(4, TimeUnit.MINUTES);
        if (!ended) {
            p.destroyForcibly();
        }
        String out = Files.readString(log, StandardCharsets.UTF_8);
        assertTrue(ended, "spark-submit ended within 4 minutes:\n" + tail(out));
        assertEquals(0, p.exitValue(), tail(out));

        // Ivy found it in the directory and fetched that jar alone: the POM asks for nothing else.
        assertTrue(out.contains("found " + GROUP + "#" + ARTIFACT + ";" + VERSION + " in only-this-repository"), tail(out));
        assertTrue(!out.contains("downloading http"), tail(out));
        try (Stream<Path> fetched = Files.list(ivy.resolve("jars"))) {
            assertEquals(List.of(GROUP + "_" + ARTIFACT + "-" + VERSION + ".jar"),
                    fetched.map(f -> f.getFileName().toString()).sorted().toList());
        }
        List<String> lines = out.lines().toList();
        assertTrue(lines.contains("sum=" + 20000L * 19999L / 2), tail(out));
        assertTrue(lines.contains("manager=" + RdmaShuffleManager.class.getName()), tail(out));
        // No device here: the engine runs on the software provider, which is never counted as RDMA (issue 53).
        assertTrue(lines.contains("executors.onSoftwareProvider=2"), "both executors' shuffles on the engine:\n" + tail(out));
        assertTrue(lines.contains("executors.onRdma=0") && lines.contains("rdma.blocks=0"), "nothing counted as RDMA:\n" + tail(out));
        assertTrue(lines.contains("executors.fallenBack=0"), tail(out));
        assertTrue(lines.contains("fallback.blocks=0"), tail(out));
        String engineBlocks = lines.stream().filter(l -> l.startsWith("softwareProvider.blocks=")).findFirst()
                .orElse("softwareProvider.blocks=?");
        assertNotEquals("softwareProvider.blocks=0", engineBlocks, "remote blocks came over the engine:\n" + tail(out));
    }

    /**
     * The artifact in a Maven repository's layout, as {@code mvn deploy} of a release writes it: the jar
     * and the published POM under {@code group/artifact/version/}, each with its SHA-1 and MD5 (which
     * Ivy checks).
     */
    private static Path deploy(Path repo) throws Exception {
        Path at = repo.resolve(GROUP.replace('.', '/')).resolve(ARTIFACT).resolve(VERSION);
        Files.createDirectories(at);
        String base = ARTIFACT + "-" + VERSION;
        for (Path[] copy : new Path[][] {{JAR, at.resolve(base + ".jar")}, {POM, at.resolve(base + ".pom")}}) {
            byte[] bytes = Files.readAllBytes(copy[0]);
            Files.write(copy[1], bytes);
            for (String[] sum : new String[][] {{"SHA-1", ".sha1"}, {"MD5", ".md5"}}) {
                Files.writeString(copy[1].resolveSibling(copy[1].getFileName() + sum[1]),
                        HexFormat.of().formatHex(MessageDigest.getInstance(sum[0]).digest(bytes)));
            }
        }
        return repo;
    }

    /** The application: compiled against Spark alone (it names no class of ours), in a jar of its own. */
    private static Path compileJob(Path dir, String classpath) throws Exception {
        Path src = Files.createDirectories(dir.resolve("src"));
        Files.writeString(src.resolve("PackagesJob.java"), JOB);
        Path classes = Files.createDirectories(dir.resolve("classes"));
        int rc = ToolProvider.getSystemJavaCompiler().run(null, null, null, "-cp", classpath, "-d", classes.toString(),
                src.resolve("PackagesJob.java").toString());
        assertEquals(0, rc, "the job compiles against Spark alone");
        Path jar = dir.resolve("packages-job.jar");
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar)); Stream<Path> files = Files.walk(classes)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                out.putNextEntry(new JarEntry(classes.relativize(f).toString().replace(File.separatorChar, '/')));
                out.write(Files.readAllBytes(f));
                out.closeEntry();
            }
        }
        return jar;
    }

    private static Document parse(Path xml) throws Exception {
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setNamespaceAware(false);
        return f.newDocumentBuilder().parse(xml.toFile());
    }

    /** The text of {@code parent}'s direct child {@code name}, or null. */
    private static String child(Element parent, String name) {
        for (org.w3c.dom.Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && e.getTagName().equals(name)) {
                return e.getTextContent().trim();
            }
        }
        return null;
    }

    private static String tail(String out) {
        List<String> l = out.lines().toList();
        return String.join("\n", l.subList(Math.max(0, l.size() - 80), l.size()));
    }
}
