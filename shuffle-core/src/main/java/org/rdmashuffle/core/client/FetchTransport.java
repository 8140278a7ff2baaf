package org.rdmashuffle.core.client;

import org.rdmashuffle.core.buffer.RegisteredBufferPool;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.transport.DataConnection;

/** What a {@link PeerFetcher} needs from the engine around it. */
public interface FetchTransport {
    /** A fresh id for a request or a chain; never repeats within the process. */
    long nextId();

    /** Sends a metadata message on the connection (queued if no send buffer is free); throws if the post fails. */
    void send(DataConnection connection, Message message);

    /** Destroys the connection's queue pairs and forgets it: afterwards no read of it writes to memory. */
    void retire(DataConnection connection);

    RegisteredBufferPool buffers();

    FetchBudget budget();
}
