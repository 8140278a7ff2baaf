package org.rdmashuffle.hadoop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.hadoop.mapreduce.Counters;
import org.junit.jupiter.api.Test;

/**
 * The job counters tell the carriers apart (issue 53): a map output an engine on a verbs device read is
 * RDMA's, one read over the software provider is counted as such and never as RDMA, in the counters'
 * enum names and in the display names the job's output and history show.
 */
class RdmaShuffleCounterTest {
    @Test
    void anEngineOnTheSoftwareProvider_countsApartFromRdma_andAnEngineOnADevice_countsAsRdma() {
        assertEquals(RdmaShuffleCounter.MAP_OUTPUTS_OVER_SOFTWARE_PROVIDER, RdmaShuffleCounter.mapOutputsOver("software"));
        assertEquals(RdmaShuffleCounter.BYTES_OVER_SOFTWARE_PROVIDER, RdmaShuffleCounter.bytesOver("software"));
        assertEquals(RdmaShuffleCounter.MAP_OUTPUTS_OVER_RDMA, RdmaShuffleCounter.mapOutputsOver("ibverbs"));
        assertEquals(RdmaShuffleCounter.BYTES_OVER_RDMA, RdmaShuffleCounter.bytesOver("ibverbs"));
    }

    @Test
    void theDisplayNames_callOnlyADevicesReadsRdma() {
        Counters counters = new Counters();
        for (RdmaShuffleCounter c : RdmaShuffleCounter.values()) {
            counters.findCounter(c).increment(1);
        }
        assertEquals("rdma-shuffle", counters.getGroup(RdmaShuffleCounter.class.getName()).getDisplayName());
        for (RdmaShuffleCounter c : RdmaShuffleCounter.values()) {
            String shown = counters.findCounter(c).getDisplayName();
            assertFalse(shown.equals(c.name()), c + " has no display name");
            if (c.name().endsWith("_OVER_SOFTWARE_PROVIDER")) {
                assertTrue(shown.contains("software provider"), shown);
                assertFalse(shown.replace("not RDMA", "").contains("RDMA"), "the software provider's counter says RDMA: " + shown);
            } else {
                assertTrue(shown.contains("over RDMA (a verbs device)"), shown);
            }
        }
    }
}
