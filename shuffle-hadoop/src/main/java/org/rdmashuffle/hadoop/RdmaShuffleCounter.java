package org.rdmashuffle.hadoop;

/**
 * The job counters of {@link RdmaShuffleConsumerPlugin}, shown beside MapReduce's own in the job's
 * output and history (group "RDMA shuffle"; names in RdmaShuffleCounter.properties). What a reducer
 * fetched over HTTP instead is the job's {@code Reduce shuffle bytes} less {@link #BYTES_OVER_RDMA}.
 */
public enum RdmaShuffleCounter {
    /** Map outputs (one reduce's partition of each) read over RDMA and handed to the merge manager. */
    MAP_OUTPUTS_OVER_RDMA,
    /** Their bytes as stored (compressed, with the IFile checksum): the unit of {@code Reduce shuffle bytes}. */
    BYTES_OVER_RDMA
}
