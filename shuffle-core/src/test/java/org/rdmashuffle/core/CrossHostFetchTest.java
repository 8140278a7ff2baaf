package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.verbs.Gid;
import org.rdmashuffle.verbs.VerbsProvider;

/**
 * The engine across two hosts, each with its own device: the serving side is a {@link ServingProcess}
 * on the other host ({@code rdmashuffle.test.peer}, host:port), started there by the Soft-RoCE pair
 * run (softroce/guest-tests.sh --pair) with the outputs this test expects. Unlike one rxe
 * device looping packets to itself, this crosses a link: GID choice, address resolution, path MTU.
 */
class CrossHostFetchTest {
    /** Must match what the pair run starts on the other host. */
    static final int SHUFFLE = 9;
    static final int MAPS = 4;
    static final int PARTITIONS = 16;
    static final int MAX_PARTITION_BYTES = 16 << 10;

    @TempDir
    Path dir;

    private static InetSocketAddress peer() {
        String peer = System.getProperty("rdmashuffle.test.peer");
        Assumptions.assumeTrue(peer != null, "needs a serving engine on another host: run "
                + "softroce/guest-tests.sh --pair (two Soft-RoCE guests on one wire)");
        int colon = peer.lastIndexOf(':');
        return new InetSocketAddress(peer.substring(0, colon), Integer.parseInt(peer.substring(colon + 1)));
    }

    @Test
    void blocksFromAnotherHostsDevice_arriveIntact_sentFromTheGidOfOurAddress() throws Exception {
        InetSocketAddress peer = peer();
        List<EngineTestSupport.MapOutput> outputs = new ArrayList<>();
        Path mine = Files.createDirectories(dir.resolve("expected"));
        for (int m = 0; m < MAPS; m++) {
            outputs.add(EngineTestSupport.writeMapOutput(mine, SHUFFLE, m, PARTITIONS, MAX_PARTITION_BYTES, 31L * SHUFFLE + m));
        }
        VerbsProvider provider = EngineTestSupport.provider();
        try (RdmaShuffleEngine client = RdmaShuffleEngine.start(EngineTestSupport.smallConfig(), EngineTestSupport.APP,
                EngineTestSupport.SECRET, provider)) {
            String bind = System.getProperty("rdmashuffle.test.bindAddress");
            if (bind != null) {
                assertEquals(Gid.ipv4Mapped((java.net.Inet4Address) InetAddress.getByName(bind)), client.gid().gid(),
                        "the GID chosen: " + client.gid().reason());
            }
            EngineTestSupport.fetchAllIntact(client, peer, outputs);
        } finally {
            EngineTestSupport.assertNoConnectionsLeft(provider);
            EngineTestSupport.closeProvider(provider);
        }
    }

    /**
     * A "peer" that answers CONNECT with a queue pair at a GID no host on the wire has: the fetch fails
     * in bounded time with an error naming that GID and what to check, and nothing is left behind.
     */
    @Test
    void aPeerAtAGidNobodyAnswersFailsTheFetch_namingTheGidAndWhatToCheck() throws Exception {
        peer(); // only on the wire of the pair run
        String bind = System.getProperty("rdmashuffle.test.bindAddress");
        byte[] nobody = InetAddress.getByName(bind).getAddress();
        nobody[3] = (byte) 77;
        Gid unreachable = Gid.ipv4Mapped((java.net.Inet4Address) InetAddress.getByAddress(nobody));
        VerbsProvider provider = EngineTestSupport.provider();
        try (org.rdmashuffle.core.control.ControlServer fake = new org.rdmashuffle.core.control.ControlServer(
                     new InetSocketAddress(bind, 0), java.util.Map.of(EngineTestSupport.APP, EngineTestSupport.SECRET)::get,
                     (session, type, payload) -> org.rdmashuffle.core.protocol.ConnectCodec.encode(
                             new org.rdmashuffle.core.protocol.ConnectCodec.Connect(32 << 10, List.of(
                                     new org.rdmashuffle.verbs.QueuePairEndpoint(0x4242, 7, unreachable, 0,
                                             org.rdmashuffle.verbs.Mtu.MTU_1024)))), 64 << 10);
             RdmaShuffleEngine client = RdmaShuffleEngine.start(EngineTestSupport.smallConfig(), EngineTestSupport.APP,
                     EngineTestSupport.SECRET, provider)) {
            BlockId block = BlockId.of(SHUFFLE, 0, 0);
            Collector got = new Collector(1);
            client.fetchBlocks(fake.address(), List.of(block), got);
            got.await();
            Throwable e = got.failed.get(block);
            org.junit.jupiter.api.Assertions.assertTrue(e != null && e.getMessage().contains("the peer's GID " + unreachable
                    + " cannot be reached") && e.getMessage().contains("ip neigh"), String.valueOf(e));
            EngineTestSupport.assertNothingLeaks(client);
        } finally {
            EngineTestSupport.assertNoConnectionsLeft(provider);
            EngineTestSupport.closeProvider(provider);
        }
    }
}
