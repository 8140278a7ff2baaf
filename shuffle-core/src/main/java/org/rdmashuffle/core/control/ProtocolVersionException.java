package org.rdmashuffle.core.control;

import java.io.IOException;

/**
 * The peer speaks no version of the control protocol this side speaks (a release more than one apart:
 * docs/compatibility.md): no retry will help. The message names both sides' versions.
 */
public final class ProtocolVersionException extends IOException {
    private static final long serialVersionUID = 1L;
    /** A server of a release before negotiation refused our offer: it may still speak {@link ProtocolVersions#ALONE} alone. */
    private final boolean offerRefusedBeforeNegotiation;

    public ProtocolVersionException(String message) {
        this(message, false);
    }

    ProtocolVersionException(String message, boolean offerRefusedBeforeNegotiation) {
        super(message);
        this.offerRefusedBeforeNegotiation = offerRefusedBeforeNegotiation;
    }

    boolean offerRefusedBeforeNegotiation() {
        return offerRefusedBeforeNegotiation;
    }
}
