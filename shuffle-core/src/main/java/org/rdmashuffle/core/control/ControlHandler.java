package org.rdmashuffle.core.control;

/** Serves requests of authenticated peers (e.g. the QP endpoint exchange). Called on a Netty event-loop thread. */
@FunctionalInterface
public interface ControlHandler {
    /**
     * @param appId the application the peer authenticated for
     * @return the reply payload; an exception becomes an ERROR frame carrying its message
     */
    byte[] handle(String appId, byte type, byte[] payload) throws Exception;
}
