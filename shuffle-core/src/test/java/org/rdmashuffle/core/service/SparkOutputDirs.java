package org.rdmashuffle.core.service;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.rdmashuffle.core.server.files.Confinement;

/**
 * Spark's outputs on disk, as tests lay them out: an application's directories as the node service
 * gives them, and index files in Spark's format. Shared by shuffle-core's tests of
 * {@link SparkOutputFiles} and shuffle-spark's test against Spark's own DiskBlockManager (test jar).
 */
public final class SparkOutputDirs {
    private SparkOutputDirs() {
    }

    /** The application's directories as the service gives them: canonical, owner not checked (Hadoop security off). */
    public static Confinement confined(List<Path> dirs) {
        return new Confinement(dirs.stream().map(d -> {
            try {
                return Files.createDirectories(d).toRealPath();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }).toList(), null);
    }

    /** Writes a Spark index file: the partitions' offsets as big-endian longs. */
    public static void writeIndex(Path index, long... offsets) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            for (long o : offsets) {
                out.writeLong(o);
            }
        }
        Files.createDirectories(index.getParent());
        Files.write(index, bytes.toByteArray());
    }
}
