package org.rdmashuffle.core.control;

/**
 * Serves requests of authenticated peers (e.g. the QP endpoint exchange). Called on the control
 * server's request executor, one request at a time per connection.
 */
@FunctionalInterface
public interface ControlHandler {
    /**
     * @param session the authenticated connection the request came on
     * @return the reply payload; an exception becomes an ERROR frame carrying its message
     */
    byte[] handle(ControlSession session, byte type, byte[] payload) throws Exception;
}
