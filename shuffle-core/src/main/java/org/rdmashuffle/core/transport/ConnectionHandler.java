package org.rdmashuffle.core.transport;

import org.rdmashuffle.core.protocol.Message;

/**
 * What owns a data connection: the fetcher of a peer on the fetching side, the served application
 * on the serving side. The {@link CompletionRouter} hands it what happens on its connection, found
 * through the {@link ConnectionTable} by queue-pair number; nothing above routes by the connection's
 * kind. Set once ({@link DataConnection#handle}) before the connection is tracked, so every
 * completion of a tracked connection has an owner.
 *
 * <p>Threads: messages and read completions come on poller threads; failures on a poller, the timer
 * (a send failed) or the async-event thread (the device put a queue pair in error); {@link #onRetired}
 * on whichever thread retired the connection. A handler never blocks the poller.
 */
public interface ConnectionHandler {
    /** A metadata message received and decoded. */
    void onMessage(DataConnection c, Message m);

    /** A read chain of {@code c} completed: {@code failure} null on success, else what the device said. */
    void onReadCompleted(DataConnection c, long chainId, Throwable failure);

    /** The connection broke (a send or receive failed, the device reported it): its owner ends it. */
    void onFailure(DataConnection c, Throwable cause);

    /**
     * One of this owner's callbacks ({@link #onMessage}, {@link #onReadCompleted}, {@link
     * #onWindowCompleted}) threw on a poller: a bug, or input no check caught. {@code cause} names what
     * was handled and what was thrown. The connection goes at once, as for {@link #onFailure}, so what
     * waits on it fails now rather than at its timeout; logged once per connection, naming it.
     */
    default void onCallbackFailed(DataConnection c, Throwable cause) {
        if (c.markClosing()) { // once, however many of its completions throw before it is untracked
            System.getLogger(ConnectionHandler.class.getName()).log(System.Logger.Level.WARNING, "rdma-shuffle: " + cause.getMessage() + " on " + c + "; failing the connection",
                    cause.getCause());
        }
        onFailure(c, cause);
    }

    /** Its peer sent a message that cannot be decoded, or one this side does not take. */
    void onProtocolError(DataConnection c, String reason);

    /** The connection was retired ({@link ConnectionTable#retire}): called once, after its queue pairs are destroyed. */
    void onRetired(DataConnection c);

    /**
     * {@code c} is being retired: its queue pairs are in ERR (nothing more runs on them) and about to
     * be destroyed. Frees what is bound to them first (memory windows). Once, on the retiring thread.
     */
    default void beforeDestroy(DataConnection c) {
    }

    /**
     * A chain of memory-window binds posted on {@code c} completed ({@code failure} null), or failed;
     * only serving connections reading through windows post them.
     */
    default void onWindowCompleted(DataConnection c, Throwable failure) {
        if (failure != null) {
            onFailure(c, failure);
        }
    }
}
