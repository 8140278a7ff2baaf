package org.rdmashuffle.core.testing;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;

/**
 * A small tmpfs mounted for one test, to be filled: what a disk that fills does to a writer is a real
 * {@code ENOSPC} ("No space left on device") from a real filesystem, not a stand-in. Mounting needs
 * root: elsewhere a test using it skips, saying so, except under {@code CI=true} (CI runs as root),
 * where it fails instead. Owns the mount and its filler file; {@link #close} unmounts (lazily if a
 * process still holds a file there).
 */
public final class SmallFilesystem implements AutoCloseable {
    private static final String FILLER = ".filler";

    private final Path root;
    private boolean mounted;

    private SmallFilesystem(Path root) {
        this.root = root;
    }

    /**
     * Mounts a tmpfs of {@code bytes} at {@code dir} (made if missing), or skips the calling test where
     * that cannot be done (not root, no mount), failing it instead under {@code CI=true}.
     */
    public static SmallFilesystem mount(Path dir, long bytes) throws IOException, InterruptedException {
        requireMountable();
        SmallFilesystem fs = new SmallFilesystem(Files.createDirectories(dir).toAbsolutePath());
        String failed = run("mount", "-t", "tmpfs", "-o", "size=" + bytes + ",mode=0755", "tmpfs", fs.root.toString());
        if (failed != null) {
            skipOrFail("mount -t tmpfs failed: " + failed);
        }
        fs.mounted = true;
        return fs;
    }

    /**
     * Skips the calling test where no tmpfs can be mounted (not root), failing it instead under {@code
     * CI=true}: for a test to call before it starts what it would leave running.
     */
    public static void requireMountable() throws IOException {
        String cause = unavailabilityCause();
        if (cause != null) {
            skipOrFail(cause);
        }
    }

    private static void skipOrFail(String cause) {
        if ("true".equals(System.getenv("CI"))) {
            throw new AssertionError("CI must run the full-disk tests, but " + cause);
        }
        Assumptions.assumeTrue(false, () -> "no small filesystem to fill here: " + cause + " (run as root)");
    }

    /** Why no tmpfs can be mounted here, or null. */
    static String unavailabilityCause() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"), StandardCharsets.US_ASCII)) {
            if (line.startsWith("Uid:") && !"0".equals(line.split("\\s+")[2])) {
                return "not root (effective uid " + line.split("\\s+")[2] + ")";
            }
        }
        return null;
    }

    /** Where it is mounted. */
    public Path root() {
        return root;
    }

    /** Bytes a writer can still put there. */
    public long free() throws IOException {
        return Files.getFileStore(root).getUsableSpace();
    }

    /** Fills it with a file of its own until only about {@code leaveBytes} are free (whole pages). */
    public void fillLeaving(long leaveBytes) throws IOException {
        long toWrite = free() - leaveBytes;
        byte[] chunk = new byte[64 << 10];
        try (OutputStream out = Files.newOutputStream(root.resolve(FILLER))) {
            while (toWrite > 0) {
                int n = (int) Math.min(chunk.length, toWrite);
                out.write(chunk, 0, n);
                toWrite -= n;
            }
        }
    }

    /** Deletes the filler: the space it took is free again. */
    public void freeSpace() throws IOException {
        Files.deleteIfExists(root.resolve(FILLER));
    }

    /** Whether the filler is there (a task waits for it to go). */
    public static boolean isFull(Path root) {
        return Files.exists(root.resolve(FILLER));
    }

    /** Every regular file there now but the filler, relative to the root, sorted. */
    public List<String> files() throws IOException {
        try (var walk = Files.walk(root)) {
            return walk.filter(Files::isRegularFile).filter(p -> !p.getFileName().toString().equals(FILLER))
                    .map(p -> root.relativize(p).toString()).sorted().toList();
        }
    }

    /** Unmounts: at once if nothing holds a file there, else after a few tries lazily (the kernel detaches it). */
    @Override
    public void close() throws IOException, InterruptedException {
        if (!mounted) {
            return;
        }
        String failed = null;
        for (int attempt = 0; attempt < 10; attempt++) {
            failed = run("umount", root.toString());
            if (failed == null) {
                mounted = false;
                return;
            }
            Thread.sleep(200); // a process that had files open there still exiting
        }
        String lazy = run("umount", "-l", root.toString());
        mounted = lazy != null;
        if (lazy != null) {
            throw new IOException("cannot unmount " + root + ": " + failed + "; lazily: " + lazy);
        }
    }

    /** Runs a command (bounded: 30 s); null if it succeeded, else its status and output. */
    private static String run(String... command) throws IOException, InterruptedException {
        Process p;
        try {
            p = new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (IOException noCommand) {
            return noCommand.getMessage();
        }
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return String.join(" ", command) + " did not finish in 30 s";
        }
        return p.exitValue() == 0 ? null : "exit " + p.exitValue() + ": " + out;
    }
}
