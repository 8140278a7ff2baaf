package org.rdmashuffle.spark;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.rdmashuffle.core.server.MapOutputRegistry;
import org.rdmashuffle.core.server.files.OutputFile;

/**
 * Finds, for this executor's engine, map outputs it holds but did not write: those another executor
 * moved here when it was decommissioned ({@code spark.storage.decommission.shuffleBlocks.enabled}).
 * Spark stores a moved output's data and index files where this executor's own would be, then points
 * the output's {@code MapStatus} at this executor's shuffle server id, which carries this engine's
 * address: reducers ask this engine for it, and this resolver finds it on the first request.
 *
 * <p>A reducer names only the shuffle and map ids; the files are looked up in this executor's block
 * manager dirs by Spark's own naming, never by a path from a peer, and links are not followed. The
 * index is read only if its size is that of an index; the data file must hold what the index says.
 */
final class MovedOutputs implements MapOutputRegistry.Resolver {
    private static final System.Logger LOG = System.getLogger(MovedOutputs.class.getName());
    /** An index of more partitions than any shuffle has (Spark's limit is 2^24) is not read. */
    private static final long MAX_INDEX_BYTES = ((1L << 24) + 1) * 8;

    private final IndexShuffleBlockResolver files;

    MovedOutputs(IndexShuffleBlockResolver files) {
        this.files = files;
    }

    @Override
    public MapOutputRegistry.ResolvedOutput resolve(String app, int shuffleId, long mapId) throws IOException {
        if (shuffleId < 0 || mapId < 0) {
            return null;
        }
        Path index = files.getIndexFile(shuffleId, mapId, files.getIndexFile$default$3()).toPath();
        if (!Files.isRegularFile(index, LinkOption.NOFOLLOW_LINKS)) {
            return null; // not here: the reducer hears "no map output", and Spark runs the map again
        }
        long indexBytes = Files.size(index);
        if (indexBytes > MAX_INDEX_BYTES) {
            throw new IOException("the index of map output " + mapId + " of shuffle " + shuffleId + " has " + indexBytes
                    + " bytes: more partitions than a shuffle can have");
        }
        long[] offsets = RdmaShuffleWriter.readOffsets(index.toFile());
        long end = offsets[offsets.length - 1];
        if (end == 0) {
            return null; // every partition empty: reducers never ask
        }
        File data = files.getDataFile(shuffleId, mapId);
        if (!Files.isRegularFile(data.toPath(), LinkOption.NOFOLLOW_LINKS) || data.length() != end) {
            throw new IOException("map output " + mapId + " of shuffle " + shuffleId + ": its data file " + data + " is "
                    + (data.exists() ? data.length() + " bytes, its index ends at " + end : "missing"));
        }
        LOG.log(System.Logger.Level.INFO, "rdma-shuffle: serving map output " + mapId + " of shuffle " + shuffleId
                + ", which this executor did not write (moved here from a decommissioned executor)");
        return new MapOutputRegistry.ResolvedOutput(OutputFile.trusted(data.toPath()), offsets, null);
    }
}
