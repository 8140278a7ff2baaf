package org.rdmashuffle.core;

import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.function.Supplier;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.rdmashuffle.verbs.Trouble;

/**
 * Whether the Netty and Kryo this JVM gives the engine are the ones it was built against. The Spark
 * plugin bundles neither: it runs on the ones Spark brings (docs/spark.md). A Spark whose Netty or Kryo
 * is of another line (a Spark other than the one the plugin is built for, or a distribution that swapped
 * them) would fail inside the engine, at its first control message or in the middle of a shuffle, so
 * every engine start compares first and, on a mismatch, does not start ({@link Trouble#DEPENDENCY}): the
 * host's own transport carries the shuffle. The YARN jar carries its own copies, relocated: nothing to
 * compare there.
 *
 * <p>"Built against" is the same major.minor ({@link #sameLine}): Netty keeps its API within a minor line
 * (4.2.x) and Spark's maintenance releases move Netty's patch version for its fixes, so a patch apart is
 * accepted, while the engine uses API that 4.1 lacks (the 4.2 I/O handlers); Kryo 4.0.x likewise, and
 * Kryo 5 changed its API. A version that cannot be read (a class from no jar, a jar that names none) is
 * not taken for a mismatch.
 */
public final class DependencyVersions {
    /** The versions Maven built the engine against (shuffle-core/src/main/resources, filtered). */
    static final String RESOURCE = "built-against.properties";

    /** How one library was found in this JVM. */
    enum State {
        /** On the classpath, not ours: its version is compared. */
        FOUND,
        /** Our own copy, relocated into our jar (the YARN jar): it is what we were built with. */
        RELOCATED,
        /** The class the engine needs is not there at all. */
        ABSENT
    }

    /**
     * One library as this JVM has it.
     *
     * @param family what the line names it by: {@code Netty}, {@code Kryo}
     * @param library the artifact, e.g. {@code netty-transport}
     * @param builtAgainst the version the engine was built against
     * @param version the version found, or null if none could be read
     * @param source where the class came from (a jar's path), or why it is absent
     */
    record Found(String family, String library, String builtAgainst, String version, String source, State state) {
        boolean mismatched() {
            return state == State.ABSENT || state == State.FOUND && !sameLine(builtAgainst, version);
        }
    }

    private static final Pattern MAJOR_MINOR = Pattern.compile("^(\\d+)\\.(\\d+)(?:\\D.*)?$");

    /** The Netty artifacts the engine uses, each by a class it loads. */
    private static final List<Probe> NETTY = List.of(
            new Probe("netty-common", () -> io.netty.util.concurrent.DefaultThreadFactory.class),
            new Probe("netty-buffer", () -> io.netty.buffer.ByteBuf.class),
            new Probe("netty-transport", () -> io.netty.channel.Channel.class),
            new Probe("netty-codec-base", () -> io.netty.handler.codec.LengthFieldBasedFrameDecoder.class));

    private record Probe(String artifact, Supplier<Class<?>> type) {
    }

    private DependencyVersions() {
    }

    /**
     * The {@code RS11 dependency} line if this JVM's Netty or Kryo is not what the engine was built
     * against, else empty. Found once per JVM: its classpath does not change.
     */
    public static Optional<String> mismatch() {
        return Checked.LINE;
    }

    private static final class Checked {
        static final Optional<String> LINE = mismatch(found(builtAgainst()));
    }

    /**
     * Whether {@code found} is of the line of {@code builtAgainst}: the same major and minor version. A
     * version that is null or names no major.minor cannot be compared and is accepted.
     *
     * @throws IllegalArgumentException if {@code builtAgainst} names no major.minor (a broken build)
     */
    static boolean sameLine(String builtAgainst, String found) {
        Matcher built = MAJOR_MINOR.matcher(builtAgainst);
        if (!built.matches()) {
            throw new IllegalArgumentException("rdma-shuffle's " + RESOURCE + " names no major.minor version: '" + builtAgainst + "'");
        }
        if (found == null) {
            return true;
        }
        Matcher f = MAJOR_MINOR.matcher(found);
        return !f.matches() || f.group(1).equals(built.group(1)) && f.group(2).equals(built.group(2));
    }

    /**
     * The {@code RS11 dependency} line naming, for each library of {@code found} that does not match, the
     * version found (with where the first of its artifacts came from) and the line built against; or empty.
     */
    static Optional<String> mismatch(List<Found> found) {
        Map<String, List<Found>> wrong = new LinkedHashMap<>(); // by family and version found, in the order found
        for (Found f : found) {
            if (f.mismatched()) {
                wrong.computeIfAbsent(f.family() + " " + (f.state() == State.ABSENT ? "absent" : f.version()), k -> new ArrayList<>())
                        .add(f);
            }
        }
        if (wrong.isEmpty()) {
            return Optional.empty();
        }
        List<String> saw = new ArrayList<>();
        Map<String, String> needs = new LinkedHashMap<>();
        wrong.forEach((familyAndVersion, libs) -> {
            Found first = libs.get(0);
            String also = libs.size() == 1 ? "" : "; also " + String.join(", ", libs.subList(1, libs.size()).stream()
                    .map(Found::library).toList());
            saw.add(familyAndVersion + " (" + first.library() + (first.state() == State.ABSENT ? ": " : " from ") + first.source()
                    + also + ")");
            needs.put(first.family(), first.family() + " " + majorMinor(first.builtAgainst())
                    + ".x, the line rdma-shuffle was built against (" + first.builtAgainst() + ")");
        });
        return Optional.of(Trouble.DEPENDENCY.line(String.join(", ", saw), String.join(", ", needs.values()),
                "run the plugin on the Spark release it is built for, whose Netty and Kryo it uses (docs/spark.md), or build "
                        + "rdma-shuffle against these (mvn package -Dnetty.version=... -Dkryo.version=...; "
                        + "docs/troubleshooting.md, RS11); until then the RDMA engine does not start and the host's own "
                        + "transport carries the shuffle"));
    }

    private static String majorMinor(String version) {
        Matcher m = MAJOR_MINOR.matcher(version);
        return m.matches() ? m.group(1) + "." + m.group(2) : version;
    }

    /** The versions recorded at build time: {@code netty.version}, {@code kryo.version}. */
    static Properties builtAgainst() {
        Properties p = new Properties();
        try (InputStream in = DependencyVersions.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("rdma-shuffle's jar has no " + RESOURCE + " beside "
                        + DependencyVersions.class.getName() + " (is the jar whole?)");
            }
            p.load(in);
        } catch (IOException e) {
            throw new IllegalStateException("rdma-shuffle: cannot read " + RESOURCE + ": " + e, e);
        }
        for (String key : List.of("netty.version", "kryo.version")) {
            if (p.getProperty(key, "").isBlank() || p.getProperty(key).contains("${")) {
                throw new IllegalStateException("rdma-shuffle's " + RESOURCE + " has no " + key + " (was it filtered by Maven?)");
            }
        }
        return p;
    }

    /** Netty's artifacts and Kryo as this JVM has them. */
    static List<Found> found(Properties builtAgainst) {
        List<Found> found = new ArrayList<>();
        String netty = builtAgainst.getProperty("netty.version");
        for (Probe probe : NETTY) {
            Class<?> type;
            try {
                type = probe.type().get();
            } catch (LinkageError e) {
                found.add(new Found("Netty", probe.artifact(), netty, null, e.toString(), State.ABSENT));
                continue;
            }
            found.add(relocated(type) ? new Found("Netty", probe.artifact(), netty, netty, "rdma-shuffle's jar", State.RELOCATED)
                    : new Found("Netty", probe.artifact(), netty, nettyVersion(type, probe.artifact()), source(type), State.FOUND));
        }
        String kryo = builtAgainst.getProperty("kryo.version");
        Class<?> type;
        try {
            type = com.esotericsoftware.kryo.Kryo.class;
        } catch (LinkageError e) {
            found.add(new Found("Kryo", "kryo", kryo, null, e.toString(), State.ABSENT));
            return found;
        }
        found.add(relocated(type) ? new Found("Kryo", "kryo", kryo, kryo, "rdma-shuffle's jar", State.RELOCATED)
                : new Found("Kryo", "kryo", kryo, kryoVersion(type), source(type), State.FOUND));
        return found;
    }

    /**
     * Whether {@code type} is our own relocated copy. The prefix is compared as a string the relocation
     * leaves alone (it rewrites only strings that start with the library's own package).
     */
    private static boolean relocated(Class<?> type) {
        return type.getName().startsWith("org.rdmashuffle.");
    }

    /** Netty's version of {@code artifact}, from the jar {@code type} came from, else as Netty itself tells it. */
    private static String nettyVersion(Class<?> type, String artifact) {
        Properties p = fromSource(type, "META-INF/io.netty.versions.properties");
        String v = p == null ? null : p.getProperty(artifact + ".version");
        if (v != null) {
            return v;
        }
        io.netty.util.Version identified = io.netty.util.Version.identify(type.getClassLoader()).get(artifact);
        return identified == null ? null : identified.artifactVersion();
    }

    /**
     * Kryo's version, from the jar its class came from: its Maven properties, else its manifest if the
     * manifest is Kryo's (a jar that bundles Kryo has a manifest of its own, whose version is not Kryo's).
     */
    private static String kryoVersion(Class<?> type) {
        for (String artifact : List.of("kryo-shaded", "kryo")) {
            Properties p = fromSource(type, "META-INF/maven/com.esotericsoftware/" + artifact + "/pom.properties");
            if (p != null && p.getProperty("version") != null) {
                return p.getProperty("version");
            }
        }
        Path jar = jarOf(type);
        if (jar == null) {
            return null;
        }
        try (JarFile j = new JarFile(jar.toFile())) {
            Manifest m = j.getManifest();
            Attributes a = m == null ? new Attributes() : m.getMainAttributes();
            String name = String.valueOf(a.getValue("Bundle-SymbolicName")) + " " + a.getValue("Implementation-Title");
            if (!name.toLowerCase(java.util.Locale.ROOT).contains("kryo")) {
                return null;
            }
            return a.getValue("Implementation-Version") != null ? a.getValue("Implementation-Version") : a.getValue("Bundle-Version");
        } catch (IOException e) {
            return null;
        }
    }

    /** The file or directory {@code type} was loaded from, if it was loaded from one. */
    private static Path locationOf(Class<?> type) {
        CodeSource cs = type.getProtectionDomain().getCodeSource();
        if (cs == null || cs.getLocation() == null || !"file".equals(cs.getLocation().getProtocol())) {
            return null;
        }
        try {
            return Path.of(cs.getLocation().toURI());
        } catch (URISyntaxException | IllegalArgumentException e) {
            return null;
        }
    }

    private static Path jarOf(Class<?> type) {
        Path p = locationOf(type);
        return p != null && Files.isRegularFile(p) ? p : null;
    }

    private static String source(Class<?> type) {
        Path p = locationOf(type);
        return p != null ? p.toString() : "no jar: " + type.getClassLoader();
    }

    /** The properties file {@code entry} of the jar or directory {@code type} came from, or null. */
    private static Properties fromSource(Class<?> type, String entry) {
        Path p = locationOf(type);
        if (p == null) {
            return null;
        }
        Properties props = new Properties();
        try {
            if (Files.isDirectory(p)) {
                Path f = p.resolve(entry);
                if (!Files.isRegularFile(f)) {
                    return null;
                }
                try (InputStream in = Files.newInputStream(f)) {
                    props.load(in);
                }
                return props;
            }
            try (JarFile j = new JarFile(p.toFile())) {
                var e = j.getJarEntry(entry);
                if (e == null) {
                    return null;
                }
                try (InputStream in = j.getInputStream(e)) {
                    props.load(in);
                }
                return props;
            }
        } catch (IOException e) {
            return null;
        }
    }
}
