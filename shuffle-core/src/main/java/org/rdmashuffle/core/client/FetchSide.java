package org.rdmashuffle.core.client;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.Collection;
import java.util.List;

import org.rdmashuffle.core.protocol.BlockId;

/**
 * The fetching side as the engine composes it: an executor's engine has a {@link FetchService}; a
 * node's shuffle service, which serves and fetches nothing, has {@link #none()}, so which side an
 * engine has decides what it does, not a null check at every call.
 */
public interface FetchSide {
    /** Fetches {@code blocks} from the engine at {@code peer}; every block gets exactly one listener call. */
    void fetchBlocks(InetSocketAddress peer, List<BlockId> blocks, BlockFetchListener listener);

    /** Starts connecting to these peers before their blocks are asked for. */
    void connectAhead(Collection<InetSocketAddress> peers);

    /** Layouts of a shuffle's outputs that peers sent are not used again. */
    void forgetLayouts(int shuffleId);

    /** A lost output's layout is not used again. */
    void forgetOutput(int shuffleId, long mapId);

    FetchCounters counters();

    /** Blocks fetched and failed, their latency, connection set-ups, since start. */
    default org.rdmashuffle.core.metrics.FetchCounts.Snapshot fetchMetrics() {
        return org.rdmashuffle.core.metrics.FetchCounts.Snapshot.NONE;
    }

    /** Registrations of fetch buffers, since start. */
    default org.rdmashuffle.core.metrics.RegistrationCounts.Snapshot bufferRegistrations() {
        return org.rdmashuffle.core.metrics.RegistrationCounts.Snapshot.NONE;
    }

    /** Close, first phase: fetch calls waiting to run fail. */
    void stopCalls();

    /** Close: fetches waiting for a connection fail now. */
    void stopSettingUp();

    /** Close, once no set-up runs: every fetch under way fails, its queue pairs destroyed first. */
    void failAll(IOException cause);

    /** Close: the control clients' connections (peers then end what they set up for us). */
    void closeControlClients();

    /** Close, last, once every fetching queue pair is destroyed: the control clients, then the fetch buffers. */
    void close();

    /** What the fetching side has under way, for {@code EngineCounters}. */
    record FetchCounters(int connections, int controlConnections, int queuePairs, int awaitingRequests, int queuedReads,
                         int chainsInFlight, int readRequestsInFlight, int outstandingBuffers, long bytesInFlight,
                         long peakBytesInFlight, long readRequestsPosted, long blocksRead, long layoutCacheBytes) {
        static final FetchCounters NONE = new FetchCounters(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    }

    /** The side of an engine that fetches nothing: a call's blocks fail, saying so; the rest does nothing. */
    static FetchSide none() {
        return new FetchSide() {
            @Override
            public void fetchBlocks(InetSocketAddress peer, List<BlockId> blocks, BlockFetchListener listener) {
                FetchService.cannotConnect(peer, blocks, listener, new IllegalStateException(
                        "a shuffle service's engine serves applications' outputs and fetches nothing"));
            }

            @Override
            public void connectAhead(Collection<InetSocketAddress> peers) {
            }

            @Override
            public void forgetLayouts(int shuffleId) {
            }

            @Override
            public void forgetOutput(int shuffleId, long mapId) {
            }

            @Override
            public FetchCounters counters() {
                return FetchCounters.NONE;
            }

            @Override
            public void stopCalls() {
            }

            @Override
            public void stopSettingUp() {
            }

            @Override
            public void failAll(IOException cause) {
            }

            @Override
            public void closeControlClients() {
            }

            @Override
            public void close() {
            }
        };
    }
}
