package org.rdmashuffle.core.control;

import java.io.IOException;

/** The peer speaks another version of the control protocol (another rdma-shuffle release): no retry will help. */
public final class ProtocolVersionException extends IOException {
    public ProtocolVersionException(String message) {
        super(message);
    }
}
