package org.rdmashuffle.core.server.files;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A map output's data file as the registry opens it when a reducer first asks: either one this
 * process wrote itself ({@link #trusted}), or one an application left on the node, opened only
 * within its {@link Confinement} ({@link Confinement#file}).
 *
 * @param path where the file is: for the node's log, never for a peer
 * @param opener how it is opened
 */
public record OutputFile(Path path, Opener opener) {
    /** Opens a file: read-write if asked and permitted, else read-only. */
    @FunctionalInterface
    public interface Opener {
        FileChannel open(Path file, boolean writable) throws IOException;
    }

    /**
     * Opens the file: read-write if {@code writable} and permitted, else read-only (see the registry:
     * kernels before 6.2 register only a writable file mapping).
     */
    public FileChannel open(boolean writable) throws IOException {
        return opener.open(path, writable);
    }

    /** A file of this process (an executor's own output), opened as it is. */
    public static OutputFile trusted(Path file) {
        return new OutputFile(file, OutputFile::openAsItIs);
    }

    private static FileChannel openAsItIs(Path file, boolean writable) throws IOException {
        if (writable) {
            try {
                return FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
            } catch (IOException notWritable) {
                try {
                    return FileChannel.open(file, StandardOpenOption.READ);
                } catch (IOException e) {
                    e.addSuppressed(notWritable);
                    throw e;
                }
            }
        }
        return FileChannel.open(file, StandardOpenOption.READ);
    }

    @Override
    public String toString() {
        return path.toString();
    }
}
