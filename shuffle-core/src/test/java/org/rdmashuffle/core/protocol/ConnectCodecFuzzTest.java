package org.rdmashuffle.core.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;

import com.code_intelligence.jazzer.junit.FuzzTest;

import org.rdmashuffle.verbs.QueuePairEndpoint;

/**
 * The CONNECT exchange an authenticated peer sends the control plane (its receive buffer, the lease, one
 * queue-pair endpoint each with GID, LID, MTU and the software provider's admission token) and DISCONNECT:
 * {@link ConnectCodec#decode}, {@link EndpointCodec#decode} and {@link ConnectCodec#decodeDisconnect} either
 * refuse the bytes with a {@link MalformedMessageException} or return what their encoders write again and
 * decode to the same value. The first input byte picks the decoder (0 connect, 1 endpoint, 2 disconnect),
 * the rest is what the peer sent. docs/fuzzing.md
 */
class ConnectCodecFuzzTest {
    /** A control frame's bound (RdmaShuffleEngine's MAX_CONTROL_FRAME): the decoders never see more. */
    private static final int MAX_FRAME_BYTES = 64 << 10;

    @FuzzTest
    void decode(byte[] input) {
        if (input.length == 0 || input.length > MAX_FRAME_BYTES) {
            return;
        }
        byte[] sent = Arrays.copyOfRange(input, 1, input.length);
        switch (Math.floorMod(input[0], 3)) {
            case 0 -> connect(sent);
            case 1 -> endpoint(sent);
            default -> disconnect(sent);
        }
    }

    private static void connect(byte[] sent) {
        ConnectCodec.Connect c;
        try {
            c = ConnectCodec.decode(sent);
        } catch (MalformedMessageException refused) {
            return;
        }
        ConnectCodec.Connect again = ConnectCodec.decode(ConnectCodec.encode(c));
        for (int i = 0; i < c.endpoints().size() && i < again.endpoints().size(); i++) {
            assertToken(c.endpoints().get(i), again.endpoints().get(i));
        }
        assertEquals(c, again, "a decoded CONNECT does not survive encoding");
    }

    private static void endpoint(byte[] sent) {
        QueuePairEndpoint e;
        try {
            e = EndpointCodec.decode(sent);
        } catch (MalformedMessageException refused) {
            return;
        }
        QueuePairEndpoint again = EndpointCodec.decode(EndpointCodec.encode(e));
        assertToken(e, again);
        assertEquals(e, again, "a decoded endpoint does not survive encoding");
    }

    /** The tokens first: an endpoint's toString leaves its token out, and a failure should show it. */
    private static void assertToken(QueuePairEndpoint decoded, QueuePairEndpoint again) {
        assertEquals(decoded.admissionToken(), again.admissionToken(), "the admission token of QP " + decoded.qpNumber()
                + " does not survive encoding and decoding");
    }

    private static void disconnect(byte[] sent) {
        int qpn;
        try {
            qpn = ConnectCodec.decodeDisconnect(sent);
        } catch (MalformedMessageException refused) {
            return;
        }
        assertArrayEquals(sent, ConnectCodec.encodeDisconnect(qpn));
    }
}
