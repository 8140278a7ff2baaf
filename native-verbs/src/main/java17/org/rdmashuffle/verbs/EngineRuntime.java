package org.rdmashuffle.verbs;

import java.util.Optional;

/**
 * Whether this JVM can run the engine. The engine is built for Java {@value #REQUIRED_FEATURE} and calls
 * libibverbs through {@code java.lang.foreign}; Spark 4.2 and Hadoop 3.5 also run on Java 17 and 21. The
 * classes they load by name are built for Java 17 and ask here first: on an older JVM they hand the
 * shuffle to Spark's or MapReduce's own and say why in one {@link Trouble#JVM} line, and never load a
 * class of the engine (which would fail with {@code UnsupportedClassVersionError}).
 *
 * <p>Built for Java 17 (src/main/java17), like {@link Trouble}.
 */
public final class EngineRuntime {
    /** The oldest Java feature release the engine runs on: the release its classes are built for. */
    public static final int REQUIRED_FEATURE = 25;

    private EngineRuntime() {
    }

    /** Why this JVM cannot run the engine (an {@code RS09 jvm:} line), or empty where it can. */
    public static Optional<String> unavailable() {
        return unavailable(Runtime.version().feature(), System.getProperty("java.version"), System.getProperty("java.home"));
    }

    /** As {@link #unavailable()}, for a JVM of feature release {@code feature}, version and home as given. */
    public static Optional<String> unavailable(int feature, String version, String home) {
        if (feature >= REQUIRED_FEATURE) {
            return Optional.empty();
        }
        return Optional.of(Trouble.JVM.line("Java " + version + " (" + home + ")",
                "Java " + REQUIRED_FEATURE + " or newer for the RDMA engine (it is built for Java " + REQUIRED_FEATURE
                        + " and reaches libibverbs through java.lang.foreign)",
                "run this process on a JDK " + REQUIRED_FEATURE + " (docs/troubleshooting.md, RS09); until then Spark's or "
                        + "MapReduce's own shuffle carries its shuffle"));
    }

    /**
     * An instance of the engine-side class {@code className} (built for Java {@value #REQUIRED_FEATURE}),
     * made with the constructor taking {@code argTypes}; call only where {@link #unavailable()} is empty.
     * The class is looked up where {@code caller} was loaded from: the plugin's jar, which may be a user
     * jar ({@code spark.jars}, {@code spark.jars.packages}) that the loader of {@code as}, Spark's own,
     * cannot see. The class's own exceptions come out as they were thrown; anything else that stops it
     * from being made (a missing or broken class) is an {@link IllegalStateException} naming it.
     */
    public static <T> T load(Class<T> as, Class<?> caller, String className, Class<?>[] argTypes, Object... args) {
        try {
            Class<?> c = Class.forName(className, true, caller.getClassLoader());
            return as.cast(c.getConstructor(argTypes).newInstance(args));
        } catch (java.lang.reflect.InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            if (cause instanceof Error err) {
                throw err;
            }
            throw new IllegalStateException("rdma-shuffle: " + className + " cannot be made: " + cause, cause);
        } catch (ReflectiveOperationException | LinkageError e) {
            throw new IllegalStateException("rdma-shuffle: " + className + " cannot be loaded (is the jar whole, and "
                    + "built for this JVM?): " + e, e);
        }
    }
}
