package org.rdmashuffle.core.transport;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.core.config.EngineConfig.PostPath;
import org.rdmashuffle.verbs.QueuePair;

/**
 * A serving connection posts no reads: its native read chain is never made (made at once, it cost every
 * idle served peer some KiB of native memory and 130 objects), and asking it to post reads is refused by
 * name rather than posting from a chain of one.
 */
class DataConnectionTest {

    @Test
    void aServingConnection_refusesToPostReads() {
        try (DataConnection serving = new DataConnection("peer:1", DataConnection.Role.SERVING, null, 4096, new QueuePair[0],
                PostPath.POST_SEND, 64, 16, false, null)) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> serving.postReads(1, new ReadPlan()));
            assertTrue(e.getMessage().contains("serving connection to peer:1"), e.getMessage());
        }
    }
}
