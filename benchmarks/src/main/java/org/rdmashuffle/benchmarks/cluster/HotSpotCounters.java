package org.rdmashuffle.benchmarks.cluster;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A HotSpot JVM's heap figures read from outside it, without starting a process: its performance counters,
 * the file {@code /tmp/hsperfdata_<user>/<pid>} it keeps mapped and updates (what {@code jstat} reads;
 * every HotSpot JVM keeps one unless started with {@code -XX:-UsePerfData}). A {@code jcmd} or {@code jstat}
 * a second would start a JVM a second beside the ones measured, on a 2-core machine.
 *
 * <p>The file is a prologue (magic {@code 0xcafec0c0}, big-endian; then the byte order of the rest, the
 * version, the offset of the first entry and the number of entries) followed by entries, each its length,
 * the offset of its name (NUL-terminated), a vector length (0 for a scalar), a type ({@code 'J'}: a
 * 64-bit number) and the offset of its data. Heap used is the sum of every generation's spaces'
 * {@code sun.gc.generation.N.space.M.used}; committed, the sum of {@code sun.gc.generation.N.capacity}: what
 * {@code jstat -gc} adds up. Stateless; any thread.
 */
public final class HotSpotCounters {
    private static final int MAGIC = 0xcafec0c0;
    private static final int PROLOGUE_BYTES = 32;

    private HotSpotCounters() {
    }

    /** A JVM's heap at one moment, in bytes. */
    public record Heap(long used, long committed) {
    }

    /** Process {@code pid}'s counters file, if it is a HotSpot JVM of this machine's {@code /tmp} that keeps one; else null. */
    static Path file(long pid) throws IOException {
        // HotSpot writes it under the OS's /tmp whatever java.io.tmpdir says; seen through the process's root.
        Path tmp = Path.of("/proc", Long.toString(pid), "root", "tmp");
        if (!Files.isDirectory(tmp)) {
            tmp = Path.of("/tmp");
        }
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(tmp, "hsperfdata_*")) {
            for (Path dir : dirs) {
                Path f = dir.resolve(Long.toString(pid));
                if (Files.isRegularFile(f)) {
                    return f;
                }
            }
        }
        return null;
    }

    /** Process {@code pid}'s heap now, or null when it keeps no counters file (or is gone). */
    public static Heap heap(long pid) {
        try {
            Path f = file(pid);
            return f == null ? null : heap(counters(ByteBuffer.wrap(Files.readAllBytes(f))));
        } catch (IOException | RuntimeException e) {
            return null; // gone meanwhile, or not a file we can read: no reading
        }
    }

    /** The heap from a JVM's counters by name. */
    static Heap heap(Map<String, Long> counters) {
        long used = 0;
        long committed = 0;
        for (Map.Entry<String, Long> c : counters.entrySet()) {
            String name = c.getKey();
            if (name.matches("sun\\.gc\\.generation\\.\\d+\\.space\\.\\d+\\.used")) {
                used += c.getValue();
            } else if (name.matches("sun\\.gc\\.generation\\.\\d+\\.capacity")) {
                committed += c.getValue();
            }
        }
        if (committed == 0) {
            throw new IllegalArgumentException("no sun.gc.generation counters among " + counters.size());
        }
        return new Heap(used, committed);
    }

    /** Every 64-bit scalar counter of a counters file's bytes, by name. */
    static Map<String, Long> counters(ByteBuffer file) {
        if (file.limit() < PROLOGUE_BYTES || file.order(ByteOrder.BIG_ENDIAN).getInt(0) != MAGIC) {
            throw new IllegalArgumentException("not a HotSpot performance counters file");
        }
        ByteBuffer b = file.order(file.get(4) == 0 ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN);
        int entry = b.getInt(24);
        int entries = b.getInt(28);
        Map<String, Long> out = new LinkedHashMap<>();
        for (int i = 0; i < entries && entry + 20 <= b.limit(); i++) {
            int length = b.getInt(entry);
            int nameOffset = b.getInt(entry + 4);
            int vectorLength = b.getInt(entry + 8);
            byte type = b.get(entry + 12);
            int dataOffset = b.getInt(entry + 16);
            if (length <= 0) {
                break; // a JVM still writing its entries
            }
            if (type == 'J' && vectorLength == 0 && entry + dataOffset + 8 <= b.limit()) {
                int nameStart = entry + nameOffset;
                int nameEnd = nameStart;
                while (nameEnd < entry + length && b.get(nameEnd) != 0) {
                    nameEnd++;
                }
                byte[] name = new byte[nameEnd - nameStart];
                b.get(nameStart, name);
                out.put(new String(name, StandardCharsets.US_ASCII), b.getLong(entry + dataOffset));
            }
            entry += length;
        }
        return out;
    }
}
