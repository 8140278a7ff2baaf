package org.rdmashuffle.core;

/**
 * A snapshot of what the engine holds. After every fetch has been answered and every delivered block
 * released, everything "in flight" or "outstanding" is zero: tests assert exactly that.
 *
 * @param fetchConnections data connections we fetch over
 * @param servingConnections data connections peers fetch from us over
 * @param controlConnections authenticated control connections we opened
 * @param awaitingRequests metadata requests sent and not answered
 * @param queuedReads blocks described and waiting for room in the in-flight bounds
 * @param chainsInFlight RDMA_READ chains posted and not completed
 * @param readRequestsInFlight RDMA_READ work requests posted and not completed
 * @param sendsInFlight metadata SENDs posted and not completed, plus those queued for a send buffer
 * @param fetchBuffersOutstanding registered fetch buffers not yet released (by the engine or by a block's owner)
 * @param bytesInFlight bytes of reads in flight, process-wide
 * @param peakBytesInFlight the most bytes of posted reads ever in flight at once (each read lands in a fetch buffer of
 *                          its own, so never more than {@code fetchBufferMemory})
 * @param readRequestsPosted RDMA_READ work requests posted since start
 * @param blocksRead blocks those requests read (more than requests: contiguous blocks were coalesced)
 * @param registeredMapOutputBytes map-output bytes registered with the device
 * @param receivesPosted receive buffers posted to the shared receive queue
 * @param receiveLowWaterEvents times the device reported fewer posted receives than the low-water mark (SRQ limit)
 * @param completions work completions polled since start
 * @param pollerSleeps times a poller went to sleep on its completion channel
 * @param queuePairs queue pairs of our data connections, fetching and serving
 * @param layoutCacheBytes what the map-output layouts reducers keep take now, of {@code layoutCacheMemory}
 */
public record EngineCounters(int fetchConnections, int servingConnections, int controlConnections, int awaitingRequests,
                             int queuedReads, int chainsInFlight, int readRequestsInFlight, int sendsInFlight,
                             int fetchBuffersOutstanding, long bytesInFlight, long peakBytesInFlight, long readRequestsPosted,
                             long blocksRead, long registeredMapOutputBytes,
                             int receivesPosted, long receiveLowWaterEvents, long completions, long pollerSleeps,
                             int queuePairs, long layoutCacheBytes) {

    /** Nothing requested, read, sent or held: what every test ends with. */
    public boolean nothingOutstanding() {
        return awaitingRequests == 0 && queuedReads == 0 && chainsInFlight == 0 && readRequestsInFlight == 0
                && sendsInFlight == 0 && fetchBuffersOutstanding == 0 && bytesInFlight == 0;
    }
}
