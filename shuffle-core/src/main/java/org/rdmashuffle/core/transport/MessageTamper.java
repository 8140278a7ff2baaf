package org.rdmashuffle.core.transport;

import java.lang.foreign.MemorySegment;

import org.rdmashuffle.core.protocol.Message;

/**
 * Test hook: sees and may change every outgoing metadata message, and sees every incoming one before
 * its connection's owner does (fault-injection tests).
 */
public interface MessageTamper {
    MessageTamper NONE = new MessageTamper() {
    };

    /** The message to send instead; null drops it. */
    default Message message(DataConnection.Role role, Message m) {
        return m;
    }

    /** The length to send after the encoded bytes were written (and possibly changed). */
    default int bytes(DataConnection.Role role, MemorySegment encoded, int length) {
        return length;
    }

    /**
     * A message received on {@code c}, on its poller, just before its owner takes it; what this throws
     * counts as thrown by the owner ({@link ConnectionHandler#onCallbackFailed}).
     */
    default void received(DataConnection c, Message m) {
    }
}
