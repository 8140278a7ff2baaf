package org.rdmashuffle.core.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Gid;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.QueuePairEndpoint;

/** The CONNECT reply's flags: the one this release knows survives the wire, any other is refused by name. */
class ConnectCodecTest {
    private static final List<QueuePairEndpoint> ONE = List.of(endpoint());

    @Test
    void aReplyAskingForPageAlignedReads_saysSoAfterTheWire() {
        ConnectCodec.Connect reply = ConnectCodec.decode(ConnectCodec.encode(
                new ConnectCodec.Connect(4096, 120_000, ConnectCodec.PAGE_ALIGNED_READS, ONE)));
        assertTrue(reply.pageAlignedReads());
        assertEquals(120_000, reply.leaseMillis());
        assertFalse(ConnectCodec.decode(ConnectCodec.encode(new ConnectCodec.Connect(4096, 120_000, ONE))).pageAlignedReads());
    }

    @Test
    void aFlagThisReleaseDoesNotKnow_isRefusedNamingIt() {
        byte[] bytes = ConnectCodec.encode(new ConnectCodec.Connect(4096, 120_000, 0x12, ONE));
        MalformedMessageException e = assertThrows(MalformedMessageException.class, () -> ConnectCodec.decode(bytes));
        assertEquals("connect with unknown flags 0x12", e.getMessage());
    }

    private static QueuePairEndpoint endpoint() {
        return new QueuePairEndpoint(17, 42, Gid.of(new byte[16]), 3, Mtu.MTU_1024);
    }
}
