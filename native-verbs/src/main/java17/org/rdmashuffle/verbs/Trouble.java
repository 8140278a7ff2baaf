package org.rdmashuffle.verbs;

import java.util.Optional;

/**
 * The reasons RDMA does not carry a shuffle, or a fetch fails, that an operator can fix, each with a
 * code that docs/troubleshooting.md is keyed by. Every such failure is reported as one {@link #line}:
 * what was seen, what was needed, what to change. Users of earlier RDMA shuffles spent most of their
 * issue threads finding out whether RDMA was used and why not; the code makes the answer searchable
 * (logs, the Spark plugin's {@code executors.fallenBack.<key>} metrics, the doctor).
 *
 * <p>Built for Java 17 (src/main/java17): the classes Spark and YARN load on a JVM too old for the
 * engine name {@link #JVM} with it.
 */
public enum Trouble {
    NO_DEVICE("RS01", "no-device"),
    PORT_DOWN("RS02", "port-down"),
    MEMLOCK("RS03", "memlock"),
    REGISTRATION_ENOMEM("RS04", "registration-enomem"),
    GID_UNREACHABLE("RS05", "gid-unreachable"),
    PATH_MTU("RS06", "path-mtu"),
    AUTHENTICATION("RS07", "authentication"),
    REMOTE_ACCESS("RS08", "remote-access"),
    /** The JVM is older than the engine needs ({@link EngineRuntime}); Spark's or MapReduce's own shuffle carries it. */
    JVM("RS09", "jvm"),
    /** The libibverbs provider's layouts are not checked on this JVM's architecture; it refuses to run there. */
    PLATFORM("RS10", "platform"),
    /**
     * The Netty or Kryo this JVM gives the engine is not of the line it was built against (shuffle-core's
     * DependencyVersions); the engine does not start and the host's own transport carries the shuffle.
     */
    DEPENDENCY("RS11", "dependency");

    private final String code;
    private final String key;

    Trouble(String code, String key) {
        this.code = code;
        this.key = key;
    }

    /** E.g. {@code RS03}: the heading of its section in docs/troubleshooting.md. */
    public String code() {
        return code;
    }

    /** E.g. {@code memlock}: a name for metrics and logs. */
    public String key() {
        return key;
    }

    /** How every line of this trouble starts: {@code RS03 memlock:}. */
    public String prefix() {
        return code + " " + key + ":";
    }

    /** The one line: {@code RS03 memlock: saw <saw>; needs <needs>; fix: <fix>}. */
    public String line(String saw, String needs, String fix) {
        return prefix() + " saw " + saw + "; needs " + needs + "; fix: " + fix;
    }

    /** The trouble a message (or one of its causes) names by its prefix, if any: the first one. */
    public static Optional<Trouble> in(Throwable t) {
        for (Throwable x = t; x != null; x = x.getCause()) {
            Optional<Trouble> found = in(x.getMessage());
            if (found.isPresent()) {
                return found;
            }
        }
        return Optional.empty();
    }

    /** The trouble {@code message} names by its prefix, if any (the earliest in the text). */
    public static Optional<Trouble> in(String message) {
        if (message == null) {
            return Optional.empty();
        }
        Trouble first = null;
        int at = Integer.MAX_VALUE;
        for (Trouble t : values()) {
            int i = message.indexOf(t.prefix());
            if (i >= 0 && i < at) {
                at = i;
                first = t;
            }
        }
        return Optional.ofNullable(first);
    }
}
