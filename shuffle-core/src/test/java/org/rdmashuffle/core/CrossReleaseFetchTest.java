package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.client.BlockFetchException;
import org.rdmashuffle.core.control.PreviousRelease;
import org.rdmashuffle.core.control.ProtocolVersionException;
import org.rdmashuffle.core.control.ReleaseRelay;
import org.rdmashuffle.core.protocol.BlockId;

/**
 * Rolling upgrades, end to end (docs/compatibility.md): a real serving engine and a real fetching
 * engine, the control connection between them passing through a control plane of the previous release
 * ({@link PreviousRelease}: protocol version 3 as 0.1.0 encodes it) on one side or the other, and every
 * block fetched over RDMA arrives intact; and a service of a release that shares no version with this
 * one fails the fetch the way adapters fall back on (UNREACHABLE), naming both sides' versions.
 */
class CrossReleaseFetchTest {
    @TempDir
    Path dir;

    /** Fetches every partition of the pair's outputs from {@code at}; checks each arrived intact. */
    private static void fetchesEveryBlockIntact(EnginePair pair, InetSocketAddress at) throws InterruptedException {
        List<BlockId> blocks = EngineTestSupport.everyPartition(pair.outputs);
        Collector c = new Collector(blocks.size());
        pair.client.fetchBlocks(at, blocks, c);
        c.await().assertAllIntact(EngineTestSupport.expected(pair.outputs, blocks));
    }

    /** Applications upgraded first: this release's reducer, a service whose control plane is the previous release's. */
    @Test
    void thisReleasesReducer_fetchesFromAPreviousReleaseService() throws Exception {
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 1, 3, 5, EngineTestSupport.size(20_000));
             ReleaseRelay previous = ReleaseRelay.previousReleaseServer(pair.server.address(), EngineTestSupport.APP,
                     EngineTestSupport.SECRET)) {
            fetchesEveryBlockIntact(pair, previous.address());
            assertEquals(1, previous.previousReleaseFront().versionRefusals(),
                    "the reducer's offer was refused once, then it spoke version " + PreviousRelease.VERSION + " alone");
            assertEquals(1, previous.previousReleaseFront().sessions());
        }
    }

    /** Services upgraded first: a reducer whose control plane is the previous release's, this release's service. */
    @Test
    void aPreviousReleaseReducer_fetchesFromThisReleasesService() throws Exception {
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 1, 3, 5, EngineTestSupport.size(20_000));
             ReleaseRelay previous = ReleaseRelay.previousReleaseClient(pair.server.address(), EngineTestSupport.APP,
                     EngineTestSupport.SECRET)) {
            fetchesEveryBlockIntact(pair, previous.address());
        }
    }

    /** A service of a release two or more ahead, that no longer speaks this release's versions. */
    @Test
    void aServiceSpeakingOnlyNewerVersions_failsTheFetchAsUnreachable_namingBothSides() throws Exception {
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 1, 1, 2, 1000);
             ReleaseRelay later = ReleaseRelay.serverSpeaking(7, 8, pair.server.address(), EngineTestSupport.APP,
                     EngineTestSupport.SECRET)) {
            String why = refusedAsUnreachable(pair, later.address());
            assertTrue(why.contains("versions 7 to 8") && why.contains("this client offered " + ReleaseRelay.spokenHere()), why);
        }
    }

    /** A service of a release before the previous one (version 2 alone). */
    @Test
    void aServiceOlderThanThePreviousRelease_failsTheFetchAsUnreachable_namingBothSides() throws Exception {
        try (EnginePair pair = EnginePair.open().withOutputs(dir, 1, 1, 2, 1000);
             PreviousRelease.Server older = new PreviousRelease.Server(new InetSocketAddress(pair.server.address().getAddress(), 0),
                     Map.of(EngineTestSupport.APP, EngineTestSupport.SECRET)::get, (session, type, payload) -> {
                         throw new AssertionError("no request reaches a server that refused the handshake");
                     }, PreviousRelease.VERSION - 1)) {
            String why = refusedAsUnreachable(pair, older.address());
            assertTrue(why.contains("speaks version " + (PreviousRelease.VERSION - 1)) && why.contains(ReleaseRelay.spokenHere()), why);
            assertEquals(2, older.versionRefusals(), "the offer, then version 3 alone");
        }
    }

    /**
     * Asks {@code at} for a block: it fails as UNREACHABLE (what the Spark and MapReduce adapters fetch
     * over their own transport instead), caused by a ProtocolVersionException, whose message this returns.
     */
    private static String refusedAsUnreachable(EnginePair pair, InetSocketAddress at) throws InterruptedException {
        BlockId block = BlockId.of(1, 0, 0);
        Collector c = new Collector(1);
        pair.client.fetchBlocks(at, List.of(block), c);
        c.await();
        Throwable failure = c.failed.get(block);
        assertEquals(BlockFetchException.Kind.UNREACHABLE, BlockFetchException.kindOf(failure), String.valueOf(failure));
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof ProtocolVersionException) {
                assertTrue(failure.getMessage().contains(t.getMessage()), "the failure names the cause: " + failure.getMessage());
                return t.getMessage();
            }
        }
        throw new AssertionError("not a version refusal", failure);
    }
}
