package org.rdmashuffle.core.server;

import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.transport.DataConnection;

/**
 * Answers the fetch requests that arrive on serving connections. An answer that is ready (every
 * output it names registered: no disk to search, nothing to register) goes at once, from the poller
 * that received the request; the others are answered on a server thread, taken round-robin across
 * applications, with a bound per application beyond which the reducer is told "busy". Anything but
 * a fetch request on a serving connection is a protocol error.
 */
public final class FetchRequestServer {
    private static final System.Logger LOG = System.getLogger(FetchRequestServer.class.getName());

    /** How answers leave, and what becomes of a connection that cannot take one. */
    public interface Replies {
        /** Sends {@code m}; throws {@link IllegalArgumentException} if it cannot fit the reducer's receive buffer. */
        void send(DataConnection c, Message m);

        void connectionFailed(DataConnection c, Throwable cause);

        void protocolError(DataConnection c, String reason);
    }

    private final FairServerQueue work;
    private final Replies replies;

    /** @param work the server threads' queue, bounded per application */
    public FetchRequestServer(FairServerQueue work, Replies replies) {
        this.work = work;
        this.replies = replies;
    }

    /** A message received on serving connection {@code c}, on a poller thread. */
    public void onMessage(DataConnection c, Message m) {
        if (!(m instanceof Message.FetchRequest r)) {
            replies.protocolError(c, "a " + m.getClass().getSimpleName() + " where only fetch requests are served");
            return;
        }
        String app = c.tenant().app();
        FetchRequestHandler requests = c.tenant().requests();
        // Layouts in up to half the reducer's receive buffer; an answer that outgrows it anyway goes
        // without them (MetadataSender).
        int layoutBytes = r.withLayouts() ? c.peerReceiveBufferSize() / 2 : 0;
        Message ready = requests.answerIfReady(app, r, layoutBytes);
        if (ready != null) {
            reply(c, r, ready);
            return;
        }
        boolean queued = work.submit(c.tenant(), () -> {
            Message answer;
            try {
                answer = requests.answer(app, r, layoutBytes);
            } catch (RuntimeException e) { // a bug, not a bad request: still answer, so the reducer need not time out
                LOG.log(System.Logger.Level.WARNING, "rdma-shuffle: cannot answer a fetch request on " + c, e);
                answer = new Message.ErrorResponse(r.requestId(), "the server failed to answer (see its log)");
            }
            reply(c, r, answer);
        });
        if (!queued) { // back-pressure: this application already has its share of the server threads' queue
            reply(c, r, new Message.ErrorResponse(r.requestId(), "the server is busy with this application's requests: "
                    + "try again"));
        }
    }

    private void reply(DataConnection c, Message.FetchRequest r, Message answer) {
        if (c.isClosed()) {
            return; // retired while a server thread answered
        }
        try {
            replies.send(c, answer); // without its layouts if they do not fit (MetadataSender)
        } catch (IllegalArgumentException tooBig) {
            replies.send(c, new Message.ErrorResponse(r.requestId(), "the answer does not fit the reducer's "
                    + c.peerReceiveBufferSize() + "-byte receive buffer"));
        } catch (RuntimeException e) {
            replies.connectionFailed(c, e);
        }
    }
}
