package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.DeviceAttributes;
import org.rdmashuffle.verbs.VerbsContext;

/**
 * Reads that start on page boundaries ({@code pageAlignedReads}): what a device whose on-demand paging
 * is right only for transfers starting on a page needs (rxe in Linux 7.2 and 7.3). Each read takes the
 * bytes from its block's page start, and the block is handed over from as far into the buffer as it
 * starts into its page, whole or in pieces. On the software provider the reads are forced; on a
 * device with on-demand paging (the newest kernel's guest stage) the serving engine registers its map
 * outputs on demand, and a reducer that pins reads them from page boundaries because the connect
 * reply says so: without that every block not starting on a page would come back wrong.
 */
class PageAlignedReadsTest {
    /** Fetch buffers of 1 MiB (the least): blocks of up to 1.3 MB are read whole or in pieces of 1 MiB less a page. */
    private static EngineConfig config() {
        return EngineTestSupport.smallConfig().set(EngineConfig.KEY_FETCH_BUFFER_MEMORY, "1m");
    }

    @Test
    void readsFromPageBoundaries_handEveryBlockOverIntact_wholeOrInPieces(@TempDir Path dir) throws Exception {
        EngineConfig client = config().set(EngineConfig.KEY_PAGE_ALIGNED_READS, "true");
        try (EnginePair pair = new EnginePair(config(), EngineTestSupport.SECRET, client, EngineTestSupport.SECRET)
                .withOutputs(dir, 0, 3, 12, 1_300_000)) {
            assertTrue(pair.client.memoryRegistration().pageAlignedReads(), pair.client.memoryRegistration().reason());
            assertFalse(pair.server.memoryRegistration().pageAlignedReads(), pair.server.memoryRegistration().reason());
            EngineTestSupport.fetchAllIntact(pair.client, pair.server.address(), pair.outputs);
        }
    }

    @Test
    void aServerWhosePagingIsRightOnlyFromPageBoundaries_isReadSoByAReducerThatPins(@TempDir Path dir) throws Exception {
        // On a device that pages on demand the server really registers on demand, and its own check decides
        // whether reads must start on pages; elsewhere it is told to ask for them.
        boolean onDemand = EngineTestSupport.usesDevice() && devicePagesOnDemand();
        EngineConfig server = onDemand ? config().set(EngineConfig.KEY_ON_DEMAND_PAGING, "true")
                : config().set(EngineConfig.KEY_PAGE_ALIGNED_READS, "true");
        EngineConfig client = config().set(EngineConfig.KEY_ON_DEMAND_PAGING, "false");
        try (EnginePair pair = new EnginePair(server, EngineTestSupport.SECRET, client, EngineTestSupport.SECRET)
                .withOutputs(dir, 0, 3, 12, 1_300_000)) {
            assertEquals(onDemand, pair.server.memoryRegistration().onDemand(), pair.server.memoryRegistration().reason());
            assertFalse(pair.client.memoryRegistration().onDemand() || pair.client.memoryRegistration().pageAlignedReads(),
                    pair.client.memoryRegistration().reason());
            System.out.println("page-aligned reads: server " + pair.server.memoryRegistration().reason());
            EngineTestSupport.fetchAllIntact(pair.client, pair.server.address(), pair.outputs);
        }
    }

    private static boolean devicePagesOnDemand() {
        org.rdmashuffle.verbs.VerbsProvider provider = EngineTestSupport.provider();
        try (VerbsContext ctx = provider.devices().getFirst().open()) {
            return ctx.queryDevice().supportsOnDemandPaging(DeviceAttributes.ODP_ENGINE_RC_CAPS);
        } finally {
            EngineTestSupport.closeProvider(provider);
        }
    }
}
