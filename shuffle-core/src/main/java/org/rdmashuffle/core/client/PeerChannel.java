package org.rdmashuffle.core.client;

import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.transport.ReadPlan;

/**
 * One peer as a {@link PeerFetcher} sees it: where its requests go, where its read chains are posted,
 * and how the connection ends. The engine's is a data connection's queue pairs
 * ({@link ConnectionChannel}); a test's records what the fetcher did, and can fail on demand.
 */
public interface PeerChannel {
    /** "host:port" of the peer's control endpoint: what errors name. */
    String peer();

    /** Sends a metadata message (queued if no send buffer is free); throws if it cannot be posted. */
    void send(Message message);

    /** Posts one read chain; its completion carries {@code chainId}. Throws if the post fails (nothing was posted then). */
    void postReads(long chainId, ReadPlan plan);

    /** Ends the connection: once this returns, no read of it writes into any buffer. Idempotent. */
    void retire();

    /** Queue pairs it runs on (counted by the engine). */
    int queuePairs();
}
