package org.rdmashuffle.benchmarks.soak;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * How the soak's processes talk: small files in the run's {@code control/} directory, which every host
 * of the bed sees at one path (the machine's file system). The driver writes {@code phase}; the service
 * writes the applications' ids and secrets (mode 600, as YARN hands a secret to the NodeManager only)
 * and a marker once it has sampled a phase's end; the attacker asks for a new application by writing
 * {@code attacker-want}. Each file is replaced atomically (written aside, then moved), so a reader sees
 * the old text or the new, never half. JDK only: the service's JVM loads this class beside Hadoop's jars.
 */
final class SoakFiles {
    static final String PHASE = "phase";
    static final String VICTIM_APP = "victim-app";
    static final String SERVICE_READY = "service-ready";
    static final String VICTIM_READY = "victim-ready";
    static final String VICTIM_DONE = "victim-done";
    static final String ATTACKER_WANT = "attacker-want";
    static final String ATTACKER_APP = "attacker-app";
    static final String ATTACKER_STATE = "attacker-state";
    static final String ATTACKER_IDLE = "idle";
    /** Phase names. The measured ones: warmup is not compared; settle phases lie between the others. */
    static final String WARMUP = "warmup";
    static final String DONE = "done";
    /** After done, once the victim's last calls have ended: the service stops. */
    static final String STOP = "stop";
    static final String SETTLE_PREFIX = "settle-after-";
    static final String ATTACKED_PREFIX = "attacked-";
    static final String FREE_PREFIX = "free-";

    private SoakFiles() {
    }

    static Path control(Path runDir) {
        return runDir.resolve("control");
    }

    /** The marker the service writes once it has taken the (after-GC) sample that ends {@code phase}. */
    static String sampled(String phase) {
        return "sampled-" + phase;
    }

    /** The file's text, stripped; "" if it does not exist (yet). */
    static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8).strip();
        } catch (NoSuchFileException e) {
            return "";
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Replaces {@code file} with {@code text} at once; {@code secret}: readable by its owner only (600). */
    static void write(Path file, String text, boolean secret) {
        try {
            Path tmp = file.resolveSibling("." + file.getFileName() + ".tmp");
            Files.deleteIfExists(tmp);
            if (secret) {
                Files.createFile(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            }
            Files.writeString(tmp, text + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                    StandardOpenOption.TRUNCATE_EXISTING);
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static synchronized void append(Path file, String line) {
        try {
            Files.writeString(file, line + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String phase(Path runDir) {
        return read(control(runDir).resolve(PHASE));
    }

    static boolean isAttacked(String phase) {
        return phase.startsWith(ATTACKED_PREFIX);
    }

    /** Removes {@code dir} and everything below it, following no link (a link is removed, not its target). */
    static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        Files.walkFileTree(dir, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.deleteIfExists(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                Files.deleteIfExists(d);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    /** The sub dir Spark's DiskBlockManager puts {@code fileName} in for an executor of {@code localDirs} dirs. */
    static String sparkSubDir(String fileName, int localDirs) {
        int h = fileName.hashCode();
        int hash = h == Integer.MIN_VALUE ? 0 : Math.abs(h);
        return String.format("%02x", (hash / localDirs) % 64);
    }

    /** Spark's index file: {@code offsets} as big-endian longs. */
    static byte[] sparkIndex(long[] offsets) {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(offsets.length * 8);
        b.asLongBuffer().put(offsets);
        return b.array();
    }

    /** An application's directory on the service's node: {@code <local>/usercache/<user>/appcache/<app>}. */
    static Path appDir(Path serviceLocalDir, String user, String app) {
        return serviceLocalDir.resolve("usercache").resolve(user).resolve("appcache").resolve(app);
    }

    /** The text of {@code file} once it is there (not empty), waited for at most 120 s. */
    static String await(Path file) throws InterruptedException {
        for (int i = 0; i < 1200; i++) {
            String s = read(file);
            if (!s.isEmpty()) {
                return s;
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException(file + " did not appear in 120 s");
    }
}
