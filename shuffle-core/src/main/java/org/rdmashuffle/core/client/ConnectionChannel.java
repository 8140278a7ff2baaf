package org.rdmashuffle.core.client;

import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.transport.DataConnection;
import org.rdmashuffle.core.transport.ReadPlan;
import org.rdmashuffle.core.transport.TransportContext;
import org.rdmashuffle.core.transport.WorkRequestIds;

/** A {@link PeerChannel} over a fetching {@link DataConnection}: sends through the transport's sender, retires through its table. */
final class ConnectionChannel implements PeerChannel {
    private final DataConnection connection;
    private final TransportContext transport;

    ConnectionChannel(DataConnection connection, TransportContext transport) {
        this.connection = connection;
        this.transport = transport;
    }

    @Override
    public String peer() {
        return connection.peer();
    }

    @Override
    public void send(Message message) {
        transport.sender().send(connection, message, false);
    }

    @Override
    public void postReads(long chainId, ReadPlan plan) {
        connection.postReads(WorkRequestIds.of(WorkRequestIds.READ, chainId), plan);
    }

    @Override
    public void retire() {
        transport.connections().retire(connection);
    }

    @Override
    public int queuePairs() {
        return connection.queuePairs();
    }
}
