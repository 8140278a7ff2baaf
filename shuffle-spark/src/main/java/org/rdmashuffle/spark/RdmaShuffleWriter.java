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
 * data file and index offsets are registered with the engine, so reducers can read it by RDMA.
 * (Nothing is registered with the device until a reducer asks.)
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
        File index = resolver.getIndexFile(shuffleId, mapId, resolver.getIndexFile$default$3());
        File data = resolver.getDataFile(shuffleId, mapId);
        try {
            long[] offsets = readOffsets(index);
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
