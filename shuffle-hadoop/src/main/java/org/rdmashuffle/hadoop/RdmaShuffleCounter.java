package org.rdmashuffle.hadoop;

import org.rdmashuffle.verbs.Carrier;

/**
 * The job counters of {@link RdmaShuffleConsumerPlugin}, shown beside MapReduce's own in the job's
 * output and history (group "rdma-shuffle"; names in RdmaShuffleCounter.properties). What carried each
 * map output is told apart: RDMA over a verbs device (an HCA, or a kernel software device such as rxe),
 * or the software provider (RC semantics over TCP in the JVM: never counted as RDMA). What a reducer
 * fetched over HTTP instead is the job's {@code Reduce shuffle bytes} less both byte counters.
 */
public enum RdmaShuffleCounter {
    /** Map outputs (one reduce's partition of each) read over RDMA, through a verbs device, and handed to the merge manager. */
    MAP_OUTPUTS_OVER_RDMA,
    /** Their bytes as stored (compressed, with the IFile checksum): the unit of {@code Reduce shuffle bytes}. */
    BYTES_OVER_RDMA,
    /** Map outputs the engine read over the software provider (TCP, not RDMA). */
    MAP_OUTPUTS_OVER_SOFTWARE_PROVIDER,
    /** Their bytes as stored. */
    BYTES_OVER_SOFTWARE_PROVIDER;

    /** The counter of map outputs an engine on {@code provider} ({@code ibverbs}, {@code software}) reads. */
    static RdmaShuffleCounter mapOutputsOver(String provider) {
        return Carrier.ofProvider(provider) == Carrier.SOFTWARE_PROVIDER ? MAP_OUTPUTS_OVER_SOFTWARE_PROVIDER : MAP_OUTPUTS_OVER_RDMA;
    }

    /** The counter of their bytes. */
    static RdmaShuffleCounter bytesOver(String provider) {
        return Carrier.ofProvider(provider) == Carrier.SOFTWARE_PROVIDER ? BYTES_OVER_SOFTWARE_PROVIDER : BYTES_OVER_RDMA;
    }
}
