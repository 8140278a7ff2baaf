package org.rdmashuffle.core.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Gid;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.QueuePairEndpoint;

/** Endpoints round-trip with and without a token; truncated, padded or invalid ones are refused. */
class EndpointCodecTest {
    private static final Gid GID = Gid.of(new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff, 10, 99, 0, 1});

    @Test
    void endpointsRoundTrip() {
        QueuePairEndpoint withToken = new QueuePairEndpoint(0x123456, 0xABCDEF, GID, 40001, Mtu.MTU_4096,
                "00112233445566778899aabbccddeeff");
        QueuePairEndpoint hardware = new QueuePairEndpoint(17, 42, GID, 3, Mtu.MTU_1024);
        assertEquals(withToken, EndpointCodec.decode(EndpointCodec.encode(withToken)));
        QueuePairEndpoint decoded = EndpointCodec.decode(EndpointCodec.encode(hardware));
        assertEquals(hardware, decoded);
        assertNull(decoded.admissionToken());
    }

    @Test
    void malformedEndpointsAreRefused() {
        byte[] good = EndpointCodec.encode(new QueuePairEndpoint(1, 2, GID, 3, Mtu.MTU_2048, "tok"));
        assertTrue(assertThrows(MalformedMessageException.class, () -> EndpointCodec.decode(Arrays.copyOf(good, 10)))
                .getMessage().contains("truncated"));
        assertThrows(MalformedMessageException.class, () -> EndpointCodec.decode(Arrays.copyOf(good, good.length + 1)));
        byte[] badMtu = good.clone();
        badMtu[28] = 9;
        assertTrue(assertThrows(MalformedMessageException.class, () -> EndpointCodec.decode(badMtu)).getMessage()
                .contains("not an ibv_mtu value: 9"));
        byte[] badQpn = good.clone();
        badQpn[0] = 0x7F; // a QPN beyond 24 bits
        assertThrows(MalformedMessageException.class, () -> EndpointCodec.decode(badQpn));
    }

    /**
     * Found by ConnectCodecFuzzTest (its crash inputs are replayed too): a token byte of 0x80 or above
     * became U+FFFD when decoded and '?' when encoded again, so two tokens on the wire became one.
     */
    @Test
    void aTokenWithABytePastPrintableAsciiIsRefused() {
        byte[] good = EndpointCodec.encode(new QueuePairEndpoint(1, 2, GID, 3, Mtu.MTU_2048, "tok"));
        byte[] high = good.clone();
        high[high.length - 1] = (byte) 0xA8;
        assertTrue(assertThrows(MalformedMessageException.class, () -> EndpointCodec.decode(high)).getMessage()
                .contains("token byte 0xa8"));
        byte[] control = good.clone();
        control[control.length - 2] = 0x0A;
        assertThrows(MalformedMessageException.class, () -> EndpointCodec.decode(control));
    }
}
