package org.rdmashuffle.benchmarks.soak;

import java.io.IOException;
import java.io.PrintStream;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

import org.rdmashuffle.benchmarks.CommandLine;
import org.rdmashuffle.benchmarks.cluster.ClusterBed;
import org.rdmashuffle.benchmarks.cluster.ClusterRun;

/**
 * The hostile-tenant soak: on three hosts of the cluster bed, the NodeManager's RDMA service for Spark
 * ({@link SoakService}), a well-behaved application fetching from it without pause ({@link
 * SoakVictim}), and a hostile tenant cycling through every network attack of the suite ({@link
 * SoakAttacker}), each its own JVM and address. This driver runs in the machine's own namespace and
 * only writes the run's files, starts the processes and reads what they write. One sitting, phases
 * of {@code --phase-seconds} each after a warm-up: attacker-free, attacked, attacker-free, attacked
 * (between phases the attacker finishes its attack and its application is stopped, and the service
 * takes its after-GC sample). It prints the victim's blocks/s, p50 and p99 per phase, the p99 ratio
 * attacked/free for both pairs, the victim's failures, and per resource of the service its value after
 * warm-up, its maximum, its value at the end and whether it stayed flat across the two attacked
 * phases (docs/soak.md). Files under {@code benchmarks/target/soak-runs/<time>/}. The bed is torn down
 * on exit.
 *
 * <pre>
 *   HostileTenantSoak [--phase-seconds N] [--warmup-seconds W] [--attacker-nice N] [--run-dir DIR]
 * </pre>
 */
public final class HostileTenantSoak {
    /** The service's settings beyond yarn-site.xml's shipped ones (docs/soak.md says why each). */
    static final Map<String, String> SERVICE_SETTINGS = Map.of(
            "rdma.shuffle.provider", "software",
            "rdma.shuffle.connectTimeout", "3s",
            "rdma.shuffle.registeredMemoryLimit", "2g",
            "rdma.shuffle.maxRegisteredRegions", "2048");
    static final long CONNECT_TIMEOUT_MS = 3000;
    static final List<String> MEASURED = List.of("free-1", "attacked-1", "free-2", "attacked-2");

    private HostileTenantSoak() {
    }

    /** A soak's settings. */
    public record Options(int phaseSeconds, int warmupSeconds, int attackerNice, Path runDir) {
        /** Parses and checks the command line; a bad argument is an IllegalArgumentException naming it. */
        static Options parse(String... args) {
            int phase = 60;
            Integer warmup = null;
            int nice = 0;
            Path runDir = null;
            for (int i = 0; i < args.length; i++) {
                String option = args[i];
                switch (option) {
                    case "--phase-seconds" -> phase = CommandLine.atLeast(option, CommandLine.value(args, ++i, option), 1);
                    case "--warmup-seconds" -> warmup = CommandLine.atLeast(option, CommandLine.value(args, ++i, option), 0);
                    // nice(1)'s range: -20 (first) to 19 (only idle CPU).
                    case "--attacker-nice" -> nice = CommandLine.wholeNumber(option, CommandLine.value(args, ++i, option), -20, 19);
                    case "--run-dir" -> runDir = Path.of(CommandLine.value(args, ++i, option));
                    default -> throw new IllegalArgumentException("unknown argument " + option
                            + " (usage: [--phase-seconds N] [--warmup-seconds W] [--attacker-nice N] [--run-dir DIR])");
                }
            }
            return new Options(phase, warmup == null ? Math.min(15, phase) : warmup, nice, runDir);
        }
    }

    public static void main(String[] args) throws Exception {
        Options o = CommandLine.parseOrExit("HostileTenantSoak", () -> Options.parse(args));
        String cannot = ClusterBed.unavailabilityCause();
        if (cannot != null) {
            System.err.println("bin/soak makes hosts as network namespaces, and cannot here: " + cannot
                    + ". Run it as root (sudo bin/soak ...).");
            System.exit(ClusterBed.CANNOT);
        }
        SoakReport r = run(o, System.out);
        System.exit(r.passed() ? 0 : 1);
    }

    /** Runs one soak and returns its report (also printed to {@code out} and written to {@code report.txt}). */
    public static SoakReport run(Options o, PrintStream out) throws IOException, InterruptedException {
        Path root = repositoryRoot();
        Path runDir = o.runDir() != null ? o.runDir() : root.resolve("benchmarks/target/soak-runs")
                .resolve(LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
        runDir = Files.createDirectories(runDir).toAbsolutePath();
        Path logs = Files.createDirectories(runDir.resolve("logs"));
        Path control = Files.createDirectories(SoakFiles.control(runDir));
        Path localDir = Files.createDirectories(runDir.resolve("service/local"));
        Path conf = Files.createDirectories(runDir.resolve("service/etc"));
        SoakFiles.write(control.resolve(SoakFiles.PHASE), "setup", false);
        Path yarnJar = built(root.resolve("shuffle-hadoop/target"), "rdma-shuffle-hadoop-.*-yarn\\.jar",
                "mvn -pl shuffle-hadoop -am package -DskipTests");
        Path hadoopJars = root.resolve("hadoop-home/target/jars");
        if (!Files.isDirectory(hadoopJars)) {
            throw new IllegalStateException("no Hadoop jars in " + hadoopJars + ": build them with mvn -pl hadoop-home package");
        }
        Path soakJar = soakJar(runDir);
        out.println("soak run: " + runDir);
        List<Process> processes = new ArrayList<>();
        List<String> leftNamespaces;
        List<String> leftProcesses;
        String prefix;
        String aborted = null;
        try (ClusterBed bed = ClusterBed.start(3, null)) {
            prefix = bed.namespacePrefix();
            ClusterBed.Host serviceHost = bed.hosts().get(0);
            ClusterBed.Host victimHost = bed.hosts().get(1);
            ClusterBed.Host attackerHost = bed.hosts().get(2);
            out.printf("hosts: service %s, victim %s, attacker %s (%s)%n", serviceHost.address(), victimHost.address(),
                    attackerHost.address(), prefix + "*");
            Path yarnSite = writeYarnSite(conf, serviceHost.address(), localDir);
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            try {
                // The service: Hadoop 3.5's jars and the -yarn jar, as a NodeManager loads the service.
                processes.add(start(serviceHost, logs.resolve("service.log"), List.of(java, "-Xmx384m",
                        "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow", "-cp",
                        conf + ":" + hadoopJars + "/*:" + yarnJar + ":" + soakJar, SoakService.class.getName(),
                        "--run-dir", runDir.toString(), "--yarn-site", yarnSite.toString())));
                await(control.resolve(SoakFiles.SERVICE_READY), 120, processes, logs, "the service to start");
                String classpath = System.getProperty("java.class.path");
                List<String> attacker = new ArrayList<>();
                if (o.attackerNice() != 0) {
                    attacker.addAll(List.of("nice", "-n", Integer.toString(o.attackerNice())));
                }
                attacker.addAll(List.of(java, "-Xmx384m", "--enable-native-access=ALL-UNNAMED",
                        "--sun-misc-unsafe-memory-access=allow", "-cp", classpath, SoakAttacker.class.getName(),
                        "--run-dir", runDir.toString(), "--service-local", localDir.toString(), "--address",
                        attackerHost.address(), "--victim-address", victimHost.address(), "--connect-timeout-ms",
                        Long.toString(CONNECT_TIMEOUT_MS)));
                processes.add(start(attackerHost, logs.resolve("attacker.log"), attacker));
                processes.add(start(victimHost, logs.resolve("victim.log"), List.of(java, "-Xmx256m",
                        "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow", "-cp", classpath,
                        SoakVictim.class.getName(), "--run-dir", runDir.toString(), "--service-local", localDir.toString(),
                        "--address", victimHost.address())));
                await(control.resolve(SoakFiles.VICTIM_READY), 180, processes, logs, "the victim to write its outputs and start");
                Map<String, Integer> phases = new LinkedHashMap<>();
                phases.put(SoakFiles.WARMUP, o.warmupSeconds());
                for (String p : MEASURED) {
                    phases.put(p, o.phaseSeconds());
                }
                for (Map.Entry<String, Integer> p : phases.entrySet()) {
                    out.printf("phase %s: %d s%n", p.getKey(), p.getValue());
                    SoakFiles.write(control.resolve(SoakFiles.PHASE), p.getKey(), false);
                    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(p.getValue());
                    while (System.nanoTime() < end) {
                        requireAlive(processes, logs);
                        Thread.sleep(Math.min(500, Math.max(1, TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime()))));
                    }
                    // Settle: the attacker ends its attack, its application is stopped, the service samples after GC.
                    SoakFiles.write(control.resolve(SoakFiles.PHASE), SoakFiles.SETTLE_PREFIX + p.getKey(), false);
                    await(control.resolve(SoakFiles.sampled(p.getKey())), 150, processes, logs,
                            "the service's sample at the end of " + p.getKey());
                    awaitText(control.resolve(SoakFiles.ATTACKER_STATE), SoakFiles.ATTACKER_IDLE, 150, processes, logs);
                    Thread.sleep(2000);
                }
                // The victim and the attacker stop; the service serves the victim's last calls, then stops too.
                SoakFiles.write(control.resolve(SoakFiles.PHASE), SoakFiles.DONE, false);
                await(control.resolve(SoakFiles.VICTIM_DONE), 330, List.of(processes.get(0), processes.get(2)), logs,
                        "the victim to finish its last calls");
                SoakFiles.write(control.resolve(SoakFiles.PHASE), SoakFiles.STOP, false);
                for (Process p : processes) {
                    if (!p.waitFor(60, TimeUnit.SECONDS)) {
                        aborted = "a soak process did not exit within 60 s of the end";
                    }
                }
            } catch (IllegalStateException e) {
                aborted = e.getMessage();
                out.println("soak aborted: " + aborted);
            } finally {
                for (Process p : processes) {
                    if (p.isAlive()) {
                        p.descendants().forEach(ProcessHandle::destroyForcibly);
                        p.destroyForcibly();
                        p.waitFor(10, TimeUnit.SECONDS);
                    }
                }
            }
        }
        leftNamespaces = ClusterRun.namespacesLeft(prefix);
        leftProcesses = ClusterRun.processesLeft(runDir);
        SoakReport report = SoakReport.read(runDir, MEASURED, aborted, leftNamespaces, leftProcesses);
        String text = report.text();
        out.print(text);
        Files.writeString(runDir.resolve("report.txt"), text);
        return report;
    }

    private static Process start(ClusterBed.Host host, Path log, List<String> command) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(host.command(command)).redirectErrorStream(true).redirectOutput(log.toFile());
        Process p = pb.start();
        p.getOutputStream().close();
        return p;
    }

    private static void requireAlive(List<Process> processes, Path logs) {
        for (Process p : processes) {
            if (!p.isAlive()) {
                throw new IllegalStateException("a soak process exited early (status " + p.exitValue() + "); see " + logs);
            }
        }
    }

    private static void await(Path file, long seconds, List<Process> processes, Path logs, String what)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (SoakFiles.read(file).isEmpty()) {
            requireAlive(processes, logs);
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("waited " + seconds + " s for " + what + "; see " + logs);
            }
            Thread.sleep(100);
        }
    }

    private static void awaitText(Path file, String text, long seconds, List<Process> processes, Path logs)
            throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!SoakFiles.read(file).equals(text)) {
            requireAlive(processes, logs);
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("waited " + seconds + " s for " + file.getFileName() + " to say " + text
                        + " (it says " + SoakFiles.read(file) + "); see " + logs);
            }
            Thread.sleep(100);
        }
    }

    /** The node's yarn-site.xml: the shipped service settings, the node's own, and the soak's (see SERVICE_SETTINGS). */
    private static Path writeYarnSite(Path conf, String address, Path localDir) throws IOException {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("yarn.nodemanager.hostname", address);
        p.put("yarn.nodemanager.local-dirs", localDir.toString());
        p.put("spark.authenticate", "true");
        p.put("rdma.shuffle.spark.service.port", "13571");
        p.put("rdma.shuffle.service.bindAddress", address);
        p.putAll(new java.util.TreeMap<>(SERVICE_SETTINGS));
        StringBuilder xml = new StringBuilder("<?xml version=\"1.0\"?>\n<configuration>\n");
        p.forEach((k, v) -> xml.append("  <property><name>").append(k).append("</name><value>").append(v)
                .append("</value></property>\n"));
        Path file = conf.resolve("yarn-site.xml");
        Files.writeString(file, xml.append("</configuration>\n").toString());
        Files.writeString(conf.resolve("log4j.properties"), """
                log4j.rootLogger=INFO,console
                log4j.appender.console=org.apache.log4j.ConsoleAppender
                log4j.appender.console.target=System.err
                log4j.appender.console.layout=org.apache.log4j.PatternLayout
                log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
                """);
        return file;
    }

    /** This package's classes as a jar: the service's JVM gets them beside Hadoop's jars and the -yarn jar, nothing else. */
    private static Path soakJar(Path runDir) throws IOException {
        Path classes;
        try {
            classes = Path.of(HostileTenantSoak.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IOException(e);
        }
        String pkg = HostileTenantSoak.class.getPackageName().replace('.', '/') + "/";
        Path jar = runDir.resolve("soak.jar");
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar))) {
            if (Files.isDirectory(classes)) {
                try (Stream<Path> files = Files.list(classes.resolve(pkg))) {
                    for (Path f : files.filter(p -> p.toString().endsWith(".class")).sorted().toList()) {
                        out.putNextEntry(new JarEntry(pkg + f.getFileName()));
                        Files.copy(f, out);
                        out.closeEntry();
                    }
                }
            } else {
                try (JarFile in = new JarFile(classes.toFile())) {
                    for (JarEntry e : in.stream().filter(e -> e.getName().startsWith(pkg) && e.getName().endsWith(".class"))
                            .toList()) {
                        out.putNextEntry(new JarEntry(e.getName()));
                        in.getInputStream(e).transferTo(out);
                        out.closeEntry();
                    }
                }
            }
        }
        return jar;
    }

    /** The checkout's root: the first directory upward holding bin/cluster-bed. */
    static Path repositoryRoot() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isExecutable(p.resolve("bin/cluster-bed")) && Files.isRegularFile(p.resolve("conf/yarn-site.xml"))) {
                return p;
            }
        }
        throw new IllegalStateException("not inside an rdma-shuffle checkout (no bin/cluster-bed above "
                + Path.of("").toAbsolutePath() + ")");
    }

    private static Path built(Path target, String pattern, String how) throws IOException {
        try (Stream<Path> files = Files.exists(target) ? Files.list(target) : Stream.empty()) {
            return files.filter(f -> f.getFileName().toString().matches(pattern)).findFirst()
                    .orElseThrow(() -> new IllegalStateException("no " + pattern + " in " + target + ": build it with " + how));
        }
    }
}
