package org.rdmashuffle.benchmarks.engine;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

/**
 * One benchmark case: {@code maps} map outputs of {@code partitions} partitions of {@code blockBytes}
 * each, with contents a reader can recompute (so every fetched byte is checked, not just counted).
 */
record FetchWorkload(String name, int maps, int partitions, int blockBytes) {
    static final int SHUFFLE = 0;

    /**
     * The shuffle the engine serves and fetches the {@code index}-th workload of a run as: one of its own,
     * as each reduce stage reads a shuffle of its own (the engine keeps what it learns per shuffle, such
     * as layouts; Spark's Netty service keeps nothing and names every block with {@link #SHUFFLE}).
     */
    static int engineShuffle(int index) {
        return SHUFFLE + index;
    }

    int blocks() {
        return maps * partitions;
    }

    long totalBytes() {
        return (long) blocks() * blockBytes;
    }

    Path file(Path dir, int map) {
        return dir.resolve(name + "_shuffle_" + SHUFFLE + "_" + map + "_0.data");
    }

    long[] offsets() {
        long[] o = new long[partitions + 1];
        for (int p = 0; p < partitions; p++) {
            o[p + 1] = o[p] + blockBytes;
        }
        return o;
    }

    /** The bytes of block (map, partition): seeded noise, so a misplaced or torn block shows. */
    void fill(int map, int partition, ByteBuffer into) {
        SplittableRandom r = new SplittableRandom(((long) map << 32) ^ partition ^ 0x5DEECE66DL);
        while (into.remaining() >= 8) {
            into.putLong(r.nextLong());
        }
        while (into.hasRemaining()) {
            into.put((byte) r.nextInt());
        }
    }

    int expectedCrc(int map, int partition, ByteBuffer scratch) {
        scratch.clear().limit(blockBytes);
        fill(map, partition, scratch);
        scratch.flip();
        CRC32C crc = new CRC32C();
        crc.update(scratch);
        return (int) crc.getValue();
    }

    void write(Path dir) throws IOException {
        ByteBuffer block = ByteBuffer.allocateDirect(blockBytes);
        for (int m = 0; m < maps; m++) {
            try (FileChannel ch = FileChannel.open(file(dir, m), StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING)) {
                for (int p = 0; p < partitions; p++) {
                    block.clear();
                    fill(m, p, block);
                    block.flip();
                    while (block.hasRemaining()) {
                        ch.write(block);
                    }
                }
            }
        }
    }

    /** {@code <blocks>x<size>}, e.g. 2000x256k: maps of 100 partitions (1000 for blocks under 64 KiB); else an error naming it. */
    static FetchWorkload parse(String spec) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("([1-9][0-9]{0,8})x([1-9][0-9]{0,8})([km]?)")
                .matcher(spec.toLowerCase(java.util.Locale.ROOT));
        if (!m.matches()) {
            throw new IllegalArgumentException("workload '" + spec + "' is not BLOCKSxSIZE, e.g. 2000x256k or 100000x512");
        }
        int blocks = Integer.parseInt(m.group(1));
        long size = Long.parseLong(m.group(2)) << (m.group(3).equals("k") ? 10 : m.group(3).equals("m") ? 20 : 0);
        if (size > 1 << 30) {
            throw new IllegalArgumentException("workload '" + spec + "': blocks of at most 1 GiB");
        }
        int partitions = size < (64 << 10) ? 1000 : 100;
        partitions = Math.min(partitions, blocks);
        if (blocks % partitions != 0) {
            throw new IllegalArgumentException("workload '" + spec + "': the block count must be a multiple of " + partitions);
        }
        return new FetchWorkload(spec, blocks / partitions, partitions, (int) size);
    }
}
