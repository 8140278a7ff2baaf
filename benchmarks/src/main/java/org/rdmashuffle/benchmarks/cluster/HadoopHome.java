package org.rdmashuffle.benchmarks.cluster;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import javax.xml.parsers.DocumentBuilderFactory;

import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * Hadoop 3.5 laid out as a distribution ({@code share/hadoop/{common,common/lib,hdfs,yarn,mapreduce}})
 * from the jars the {@code hadoop-home} module resolved with Hadoop's own dependency versions (Netty
 * 4.1, not this project's 4.2), and one {@code etc/hadoop} per host: the cluster's own settings with
 * the project's {@code conf/yarn-site.xml} and {@code conf/mapred-site.xml} merged in as an operator
 * merges them, only the jar's install path substituted. Processes start the way {@code bin/yarn}
 * starts them: {@code java -cp <conf dir>:<the distribution's jars> CLASS}.
 */
public final class HadoopHome {
    /** The install path the shipped files name for the {@code -yarn} jar's directory. */
    static final String SHIPPED_INSTALL_DIR = "/opt/rdma-shuffle/";
    /** Where the shipped yarn-site.xml says Spark's YARN shuffle jar is. */
    static final Pattern SHIPPED_SPARK_SERVICE_JAR = Pattern.compile(
            "/opt/spark/yarn/spark-[^:,]*-yarn-shuffle\\.jar");
    private static final String[] LAYOUT = {"share/hadoop/common", "share/hadoop/common/lib", "share/hadoop/hdfs",
            "share/hadoop/yarn", "share/hadoop/mapreduce"};

    private final Path dir;
    private final Path yarnJar;
    private final String sparkService;
    private final String java;

    private HadoopHome(Path dir, Path yarnJar, String sparkService) {
        this.dir = dir;
        this.yarnJar = yarnJar;
        this.sparkService = sparkService;
        this.java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** Lays out the distribution in {@code dir} (links to the resolved jars), without Spark's shuffle service. */
    public static HadoopHome create(Path dir, Path hadoopJars, Path yarnJar) throws IOException {
        return create(dir, hadoopJars, yarnJar, null);
    }

    /**
     * @param sparkService the class path that takes the place of Spark's YARN shuffle jar in the
     *     {@code spark_shuffle} service's class path, or null to leave {@code spark_shuffle} out
     */
    public static HadoopHome create(Path dir, Path hadoopJars, Path yarnJar, String sparkService) throws IOException {
        if (!Files.isDirectory(hadoopJars)) {
            throw new IllegalStateException("no Hadoop jars in " + hadoopJars + ": build them with mvn -pl hadoop-home package");
        }
        for (String sub : LAYOUT) {
            Files.createDirectories(dir.resolve(sub));
        }
        try (Stream<Path> jars = Files.list(hadoopJars)) {
            for (Path jar : jars.filter(j -> j.toString().endsWith(".jar")).sorted().toList()) {
                Path link = dir.resolve(placeOf(jar.getFileName().toString())).resolve(jar.getFileName());
                if (!Files.exists(link, LinkOption.NOFOLLOW_LINKS)) {
                    Files.createSymbolicLink(link, jar.toAbsolutePath());
                }
            }
        }
        return new HadoopHome(dir, yarnJar, sparkService);
    }

    /** Where a distribution keeps this jar: Hadoop's own by project, everything else in common/lib. */
    static String placeOf(String jar) {
        if (jar.startsWith("hadoop-yarn-")) {
            return "share/hadoop/yarn";
        } else if (jar.startsWith("hadoop-mapreduce-")) {
            return "share/hadoop/mapreduce";
        } else if (jar.startsWith("hadoop-hdfs")) {
            return "share/hadoop/hdfs";
        } else if (jar.matches("hadoop-(common|auth|annotations|registry|kms|nfs)-.*")) {
            return "share/hadoop/common";
        }
        return "share/hadoop/common/lib";
    }

    public Path dir() {
        return dir;
    }

    /** The {@code -yarn} jar as installed on every node. */
    public Path yarnJar() {
        return yarnJar;
    }

    /** The examples jar (TeraGen, TeraSort, TeraValidate). */
    public Path examplesJar() throws IOException {
        try (Stream<Path> jars = Files.list(dir.resolve("share/hadoop/mapreduce"))) {
            return jars.filter(j -> j.getFileName().toString().startsWith("hadoop-mapreduce-examples-")).findFirst()
                    .orElseThrow(() -> new IOException("no hadoop-mapreduce-examples jar in " + dir));
        }
    }

    /** What {@code hadoop classpath} prints: the conf dir, then every directory of jars. */
    String classpath(Path confDir) {
        StringBuilder cp = new StringBuilder(confDir.toString());
        for (String sub : LAYOUT) {
            cp.append(':').append(dir.resolve(sub)).append("/*");
        }
        return cp.toString();
    }

    /** The environment of every daemon and client: where Hadoop is, which Java, which conf. */
    Map<String, String> environment(Path confDir) {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("JAVA_HOME", System.getProperty("java.home"));
        env.put("HADOOP_HOME", dir.toString());
        env.put("HADOOP_COMMON_HOME", dir.toString());
        env.put("HADOOP_HDFS_HOME", dir.toString());
        env.put("HADOOP_YARN_HOME", dir.toString());
        env.put("HADOOP_MAPRED_HOME", dir.toString());
        env.put("HADOOP_CONF_DIR", confDir.toString());
        return env;
    }

    /**
     * {@code java OPTIONS -cp <classpath> CLASS ARGS}, as {@code bin/yarn} runs a daemon or {@code
     * bin/hadoop} a client. {@code --enable-native-access} is the option docs/yarn.md asks operators to add.
     */
    List<String> command(Path confDir, String heap, Path logDir, String logFile, String className, List<String> args) {
        List<String> c = new ArrayList<>(List.of(java, "-Xmx" + heap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
                "-Dhadoop.log.dir=" + logDir, "-Dyarn.log.dir=" + logDir, "-Dhadoop.log.file=" + logFile,
                "-Dyarn.log.file=" + logFile, "-Dhadoop.home.dir=" + dir, "-Dhadoop.root.logger=INFO,console",
                "-cp", classpath(confDir), className));
        c.addAll(args);
        return c;
    }

    /**
     * Writes {@code confDir}: core-site, yarn-site and mapred-site made of {@code cluster} settings (what
     * the cluster's operator already has) with the project's shipped files merged over them, and a
     * log4j.properties sending INFO to standard error. {@code withoutAuxServices} leaves services out of
     * {@code yarn.nodemanager.aux-services} (with their properties kept): see {@link YarnCluster}.
     */
    void writeConf(Path confDir, Map<String, String> core, Map<String, String> yarn, Map<String, String> mapred,
            List<String> withoutAuxServices) throws IOException {
        Files.createDirectories(confDir);
        Path shipped = Repository.root().resolve("conf");
        Map<String, String> yarnSite = new LinkedHashMap<>(yarn);
        yarnSite.putAll(installed(readProperties(shipped.resolve("yarn-site.xml"))));
        List<String> services = new ArrayList<>(List.of(yarnSite.get("yarn.nodemanager.aux-services").split(",")));
        services.removeAll(withoutAuxServices);
        yarnSite.put("yarn.nodemanager.aux-services", String.join(",", services));
        Map<String, String> mapredSite = new LinkedHashMap<>(mapred);
        mapredSite.putAll(installed(readProperties(shipped.resolve("mapred-site.xml"))));
        writeProperties(confDir.resolve("core-site.xml"), core);
        writeProperties(confDir.resolve("yarn-site.xml"), yarnSite);
        writeProperties(confDir.resolve("mapred-site.xml"), mapredSite);
        Files.writeString(confDir.resolve("log4j.properties"), """
                log4j.rootLogger=${hadoop.root.logger}
                hadoop.root.logger=INFO,console
                log4j.appender.console=org.apache.log4j.ConsoleAppender
                log4j.appender.console.target=System.err
                log4j.appender.console.layout=org.apache.log4j.PatternLayout
                log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
                """);
    }

    /** Whether the NodeManagers run Spark's shuffle service ({@code spark_shuffle}). */
    public boolean hasSparkService() {
        return sparkService != null;
    }

    /** The shipped values with the jars' install paths replaced by where this installation has them. */
    private Map<String, String> installed(Map<String, String> shipped) {
        Map<String, String> out = new LinkedHashMap<>();
        shipped.forEach((k, v) -> {
            String here = v.replace(SHIPPED_INSTALL_DIR + yarnJar.getFileName(), yarnJar.toString());
            if (sparkService != null) {
                here = SHIPPED_SPARK_SERVICE_JAR.matcher(here).replaceAll(Matcher.quoteReplacement(sparkService));
            }
            out.put(k, here);
        });
        return out;
    }

    /** The name/value pairs of a Hadoop configuration file, in order. */
    static Map<String, String> readProperties(Path file) throws IOException {
        try {
            var doc = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(file.toFile());
            NodeList props = doc.getElementsByTagName("property");
            Map<String, String> out = new LinkedHashMap<>();
            for (int i = 0; i < props.getLength(); i++) {
                Element p = (Element) props.item(i);
                out.put(text(p, "name"), text(p, "value"));
            }
            return out;
        } catch (javax.xml.parsers.ParserConfigurationException | org.xml.sax.SAXException e) {
            throw new IOException("cannot read " + file + ": " + e.getMessage(), e);
        }
    }

    private static String text(Element p, String tag) {
        NodeList n = p.getElementsByTagName(tag);
        return n.getLength() == 0 ? "" : n.item(0).getTextContent().strip();
    }

    static void writeProperties(Path file, Map<String, String> props) throws IOException {
        StringBuilder out = new StringBuilder("<?xml version=\"1.0\"?>\n<configuration>\n");
        props.forEach((k, v) -> out.append("  <property><name>").append(escape(k)).append("</name><value>")
                .append(escape(v)).append("</value></property>\n"));
        Files.writeString(file, out.append("</configuration>\n").toString());
    }

    private static String escape(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }
}
