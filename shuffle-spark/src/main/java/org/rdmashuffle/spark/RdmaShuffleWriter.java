package org.rdmashuffle.spark;

import java.io.DataInputStream;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;

import org.apache.spark.scheduler.MapStatus;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.apache.spark.shuffle.ShuffleWriter;
import org.rdmashuffle.core.RdmaShuffleEngine;
import scala.Option;
import scala.Product2;
import scala.collection.Iterator;

/**
 * Spark's own sort-shuffle writer, unchanged, plus one step after a successful commit: the output's
 * data file and partition offsets are registered with the engine, so reducers can read it by RDMA.
 * (Nothing is registered with the device until a reducer asks.) The offsets come from the partition
 * lengths the writer committed -- Spark's resolver puts there those of the output it kept when another
 * attempt committed first -- not from reading the index file back: one map task's open and read of it
 * were about 3% of the map tasks' profile samples at 1,000 partitions (JFR, docs/benchmarks.md).
 */
final class RdmaShuffleWriter<K, V> extends ShuffleWriter<K, V> {
    private static final System.Logger LOG = System.getLogger(RdmaShuffleWriter.class.getName());

    private final ShuffleWriter<K, V> writer;
    private final RdmaShuffleEngine engine;
    private final IndexShuffleBlockResolver resolver;
    private final int shuffleId;
    private final long mapId;

    RdmaShuffleWriter(ShuffleWriter<K, V> writer, RdmaShuffleEngine engine, IndexShuffleBlockResolver resolver, int shuffleId,
                      long mapId) {
        this.writer = writer;
        this.engine = engine;
        this.resolver = resolver;
        this.shuffleId = shuffleId;
        this.mapId = mapId;
    }

    @Override
    public void write(Iterator<Product2<K, V>> records) throws IOException {
        writer.write(records);
    }

    @Override
    public Option<MapStatus> stop(boolean success) {
        Option<MapStatus> status = writer.stop(success);
        if (success && status.isDefined()) {
            register();
        }
        return status;
    }

    private void register() {
        File data = resolver.getDataFile(shuffleId, mapId);
        try {
            long[] lengths = writer.getPartitionLengths();
            long[] offsets = lengths != null ? offsets(lengths)
                    : readOffsets(resolver.getIndexFile(shuffleId, mapId, resolver.getIndexFile$default$3()));
            if (offsets[offsets.length - 1] == 0) {
                return; // every partition empty: reducers never ask for it
            }
            engine.registerMapOutput(shuffleId, mapId, data.toPath(), offsets);
        } catch (IOException | RuntimeException e) {
            // Reducers asking for it get an error naming it, and Spark re-runs the map.
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: cannot register map output " + mapId + " of shuffle "
                    + shuffleId + " (" + data + "): " + e.getMessage(), e);
        }
    }

    /** Partition offsets in the data file from the partitions' lengths: numPartitions + 1, from 0. */
    static long[] offsets(long[] lengths) {
        long[] offsets = new long[lengths.length + 1];
        for (int p = 0; p < lengths.length; p++) {
            offsets[p + 1] = offsets[p] + lengths[p];
        }
        return offsets;
    }

    /** The index file as Spark writes it: numPartitions + 1 big-endian longs. */
    static long[] readOffsets(File index) throws IOException {
        long bytes = Files.size(index.toPath());
        if (bytes < 16 || bytes % 8 != 0) {
            throw new IOException("index file " + index + " has " + bytes + " bytes");
        }
        long[] offsets = new long[(int) (bytes / 8)];
        try (DataInputStream in = new DataInputStream(new java.io.BufferedInputStream(Files.newInputStream(index.toPath())))) {
            for (int i = 0; i < offsets.length; i++) {
                offsets[i] = in.readLong();
            }
        }
        return offsets;
    }

    @Override
    public long[] getPartitionLengths() {
        return writer.getPartitionLengths();
    }
}
