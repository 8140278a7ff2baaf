package org.rdmashuffle.core.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.rdmashuffle.core.buffer.RegisteredBufferPool;
import org.rdmashuffle.core.protocol.BlockDescriptor;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.transport.ReadPlan;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;

/**
 * A {@link PeerFetcher} driven by hand, without queue pairs or wall-clock time: a channel that
 * records what it sends and posts (and fails on demand), a clock the test moves, buffers whose
 * registration fails on demand. Each test names the behaviour it pins: the pump and its bounds,
 * timeouts, re-description of stale reads, allocation failures, and the order a failure takes
 * (queue pairs retired before any buffer is given back or any listener told).
 */
class PeerFetcherTest {
    private static final long TIMEOUT = TimeUnit.SECONDS.toNanos(10);
    private static final int SLAB = 64 << 10;
    private static final int RKEY = 7;
    /** Where the recording channel's peer region starts (a page boundary, as a mapped file's). */
    private static final long PEER_BASE = 0x100000;

    private final Arena arena = Arena.ofShared();
    private final AtomicLong clock = new AtomicLong(1_000_000_000L);
    private final AtomicLong ids = new AtomicLong();
    private final List<String> events = new ArrayList<>();
    private final RecordingChannel channel = new RecordingChannel();
    private volatile RuntimeException registrationFault;
    /** Thrown once by the context's {@code buffers()} when set: a bug somewhere under an answer's reading. */
    private volatile RuntimeException buffersFault;
    private final AtomicInteger regionsOpen = new AtomicInteger();
    private final RegisteredBufferPool buffers = new RegisteredBufferPool(this::register, 4L * SLAB, SLAB, () -> { });
    private final FetchBudget budget = new FetchBudget(64 << 20, 1024);
    private final LayoutBudget layouts = new LayoutBudget(1 << 20);
    private final FetchContext context = new FetchContext() {
        @Override
        public long nextId() {
            return ids.incrementAndGet();
        }

        @Override
        public RegisteredBufferPool buffers() {
            RuntimeException fault = buffersFault;
            if (fault != null) {
                buffersFault = null;
                throw fault;
            }
            return buffers;
        }

        @Override
        public FetchBudget budget() {
            return budget;
        }

        @Override
        public LayoutBudget layoutBudget() {
            return layouts;
        }

        @Override
        public long nanoTime() {
            return clock.get();
        }
    };
    private final List<FetchedBlock> delivered = new ArrayList<>();
    private final List<Throwable> failures = new ArrayList<>();
    private final BlockFetchListener listener = new BlockFetchListener() {
        @Override
        public void onBlockFetched(FetchedBlock block) {
            events.add("delivered " + block.id());
            delivered.add(block);
        }

        @Override
        public void onBlockFetchFailure(BlockId block, Throwable cause) {
            events.add("failed " + block);
            failures.add(cause);
        }
    };

    @AfterEach
    void releaseAndClose() {
        delivered.forEach(FetchedBlock::release);
        buffers.close();
        assertEquals(0, regionsOpen.get(), "registered regions left open");
        arena.close();
    }

    // ------------------------------------------------------------------ the pump

    @Test
    void blocksNextToEachOtherAreOneReadRequest_andAreDeliveredWhenTheirChainCompletes() {
        PeerFetcher f = fetcher(16, 8);
        List<BlockId> blocks = blocks(3);
        f.fetch(blocks, listener);
        Message.FetchRequest asked = channel.onlyRequest();
        assertEquals(blocks, asked.blocks());

        f.onMessage(answer(asked, 0x1000, 0)); // 3 blocks of 100 bytes, each where the last ends
        assertEquals(1, channel.chains.size(), "one chain");
        Posted chain = channel.chains.getFirst();
        assertEquals(1, chain.requests(), "one read request for three adjacent blocks");
        assertEquals(3, chain.sges(), "scattered into three buffers");
        assertTrue(delivered.isEmpty(), "nothing delivered before the chain completes");
        assertEquals(300, budget.bytesInFlight());

        f.onChainCompleted(chain.id(), null);
        assertEquals(blocks, delivered.stream().map(FetchedBlock::id).toList());
        assertEquals(100, delivered.getFirst().size());
        assertEquals(0, budget.bytesInFlight());
        assertEquals(3, buffers.outstanding(), "held by the consumer until released");
        assertIdle(f);
    }

    @Test
    void chainsInFlightToOnePeerStayWithinItsBound_theRestGoAsChainsComplete() {
        PeerFetcher f = fetcher(1, 2); // one read request per chain, two chains at a time
        f.fetch(blocks(5), listener);
        f.onMessage(answer(channel.onlyRequest(), 0x1000, 4096)); // far apart: one request each
        assertEquals(2, channel.chains.size());
        assertEquals(3, f.queuedReads());

        for (int done = 0; done < 5; done++) {
            f.onChainCompleted(channel.chains.get(done).id(), null);
            assertTrue(f.chainsInFlight() <= 2, "chains in flight: " + f.chainsInFlight());
        }
        assertEquals(5, delivered.size());
        assertEquals(5, channel.chains.size());
        assertIdle(f);
    }

    @Test
    void aBlockLargerThanABufferIsReadInPieces_andAConsumerReleasingItEarlyGetsEveryBufferBack() {
        BlockId big = BlockId.of(0, 1, 0);
        PeerFetcher f = fetchingOneBigBlock(big, false);
        assertEquals(2, channel.chains.size(), "two pieces ahead (half the buffer memory), the rest as they are read");

        f.onChainCompleted(channel.chains.get(0).id(), null);
        assertEquals(List.of(big), delivered.stream().map(FetchedBlock::id).toList(), "handed over at its first piece");
        delivered.getFirst().release(); // the consumer is done before the second piece lands
        delivered.clear();
        f.onChainCompleted(channel.chains.get(1).id(), null);
        assertEquals(0, buffers.outstanding(), "a piece landing for a released block gives its buffer back");
        assertEquals(2, channel.chains.size(), "no further piece is read for it");
        assertIdle(f);
    }

    @Test
    void withPageAlignedReads_everyReadStartsOnAPageBoundaryAtBothEnds_andEachBlockIsReadWhereItsLeadPutsIt() {
        // rxe in Linux 7.2 and 7.3 pages on demand right only for transfers that start on a page boundary.
        PeerFetcher f = new PeerFetcher(channel, context,
                new PeerFetcher.Limits(16, 16, 1 << 20, 8 << 20, 8, 64, TIMEOUT, TIMEOUT, false).withPageAlignedReads());
        byte[] peer = new byte[1 << 20];
        new java.util.Random(7).nextBytes(peer);
        channel.peerMemory = MemorySegment.ofArray(peer);
        List<BlockId> blocks = blocks(3);
        f.fetch(blocks, listener);
        Message.FetchRequest asked = channel.onlyRequest();
        long[] at = {0x1234, 0x1234 + 100, 0x9007}; // two next to each other inside a page, one 7 bytes into one
        long[] length = {100, 5_000, 3L * SLAB - 5}; // the last one larger than a buffer: read in pieces
        List<BlockDescriptor> ds = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            BlockId b = blocks.get(i);
            ds.add(new BlockDescriptor(b.shuffleId(), b.mapId(), b.startPartition(), b.endPartition(), PEER_BASE + at[i], length[i], RKEY));
        }
        f.onMessage(new Message.FetchResponse(asked.requestId(), ds));
        completeChains(f);
        assertEquals(blocks, delivered.stream().map(FetchedBlock::id).toList(), "the pieced one handed over at its first piece");
        for (int i = 0; i < 2; i++) {
            assertArrayEquals(java.util.Arrays.copyOfRange(peer, (int) at[i], (int) (at[i] + length[i])),
                    delivered.get(i).data().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE), "block " + i);
        }
        // Read the pieced block a piece at a time, the pieces its buffers read next completed in between.
        int pieceBytes = SLAB - 4096;
        java.io.InputStream in = delivered.get(2).openStream();
        java.io.ByteArrayOutputStream got = new java.io.ByteArrayOutputStream();
        for (long left = length[2]; left > 0; left -= pieceBytes) {
            got.writeBytes(assertDoesNotThrow(() -> in.readNBytes((int) Math.min(pieceBytes, length[2] - got.size()))));
            completeChains(f);
        }
        assertArrayEquals(java.util.Arrays.copyOfRange(peer, (int) at[2], (int) (at[2] + length[2])), got.toByteArray(), "block 2");
        assertEquals(2 + 4, channel.requests.size(), "the two blocks next to each other are not joined; four pieces");
        for (long[] r : channel.requests) {
            assertEquals(3, r.length, "one scatter entry per read");
            assertEquals(0, r[0] % 4096, "remote start on a page: " + Long.toHexString(r[0]));
            assertEquals(0, r[1] % 4096, "local start on a page: " + Long.toHexString(r[1]));
        }
        assertIdle(f);
    }

    /**
     * "No peer chooses our sizes": a peer describing blocks longer than any can be (Long.MAX_VALUE / 2,
     * 8 PiB) fails those blocks alone, with an error naming the block, the claimed length and the
     * limit; the other blocks of its answer arrive, and the connection carries on (until 2026-12 such
     * an answer failed the connection, and every block on it, as malformed).
     */
    @Test
    void aPeerClaimingAnAbsurdBlockLength_failsThatBlockAlone_andTheOthersArrive() {
        PeerFetcher f = fetcher(16, 8);
        long longest = ResponseCheck.longestBlock(SLAB);
        long[] claimed = {100, Long.MAX_VALUE / 2, 8L << 50, 100};
        List<BlockId> blocks = blocks(claimed.length);
        f.fetch(blocks, listener);
        f.onMessage(described(channel.onlyRequest(), claimed));

        assertTrue(!channel.retired, "the connection carries on");
        assertEquals(List.of("failed " + blocks.get(1), "failed " + blocks.get(2)), events, "the two absurd claims fail at once");
        for (int i = 0; i < 2; i++) {
            BlockFetchException e = assertInstanceOf(BlockFetchException.class, failures.get(i));
            assertEquals(BlockFetchException.Kind.FAILED, e.kind(), "a fetch failure, as for a malformed answer");
            assertEquals(List.of(blocks.get(1 + i)), e.blocks());
            String m = e.getMessage();
            assertTrue(m.contains(blocks.get(1 + i) + " as " + claimed[1 + i] + " bytes") && m.contains(Long.toString(longest)), m);
        }
        completeChains(f);
        assertEquals(List.of(blocks.get(0), blocks.get(3)), delivered.stream().map(FetchedBlock::id).toList(), "the others arrive");

        List<BlockId> next = List.of(BlockId.of(0, 9, 0)); // and the same connection serves the next fetch
        f.fetch(next, listener);
        f.onMessage(answer((Message.FetchRequest) channel.sent.get(1), 0x1000, 0));
        completeChains(f);
        assertEquals(next.getFirst(), delivered.getLast().id());
        assertIdle(f);
    }

    /**
     * A block of the longest length accepted (2^31 - 17 pieces; 128 TiB of pieces of 64 KiB) costs the
     * reducer its window of pieces, read as its consumer goes: nothing is sized from the length it
     * claims. Until 2026-12 a pieced block had two arrays of one entry per piece, allocated from the
     * claim before a byte arrived: 16 GiB of heap here, an OutOfMemoryError in the executor.
     */
    @Test
    void aBlockOfTheLongestAcceptedLength_isReadAsItsConsumerGoes_withNothingSizedByItsClaim() throws IOException {
        PeerFetcher f = fetcher(16, 8);
        long longest = ResponseCheck.longestBlock(SLAB);
        List<BlockId> blocks = blocks(2);
        f.fetch(blocks, listener);
        f.onMessage(described(channel.onlyRequest(), 100, longest));
        completeChains(f);
        assertEquals(blocks, delivered.stream().map(FetchedBlock::id).toList(), "handed over at its first piece");
        FetchedBlock block = delivered.get(1);
        assertEquals(longest, block.size());
        java.io.InputStream in = block.openStream();
        for (int piece = 0; piece < 5; piece++) { // each piece's buffer reads the next one once it is read
            assertEquals(SLAB, in.readNBytes(SLAB).length, "piece " + piece);
            completeChains(f);
        }
        assertEquals(1 + 2, buffers.outstanding(), "the small block's buffer and the window's two");
        block.release();
        completeChains(f);
        assertEquals(1, buffers.outstanding(), "the window's buffers are back");
        assertTrue(!channel.retired && failures.isEmpty());
        assertIdle(f);
    }

    /** Completes every chain posted and not yet completed, in order. */
    private int completed;

    private void completeChains(PeerFetcher f) {
        while (completed < channel.chains.size()) {
            f.onChainCompleted(channel.chains.get(completed++).id(), null);
        }
    }

    // ------------------------------------------------------------------ time

    @Test
    void aRequestUnansweredForTheFetchTimeoutFailsTheConnection_andEveryBlockItOwes() {
        PeerFetcher f = fetcher(16, 8);
        f.fetch(blocks(2), listener);
        clock.addAndGet(TIMEOUT);
        f.checkTimeouts(clock.get());
        assertTrue(failures.isEmpty() && !channel.retired, "not late yet");

        clock.addAndGet(1);
        f.checkTimeouts(clock.get());
        assertTrue(channel.retired);
        assertEquals(List.of("retired", "failed " + blocks(2).get(0), "failed " + blocks(2).get(1)), events);
        BlockFetchException e = assertInstanceOf(BlockFetchException.class, failures.getFirst());
        assertInstanceOf(TimeoutException.class, e.getCause());
        assertTrue(e.getMessage().contains("no answer to a metadata request"), e.getMessage());
        assertIdle(f);
    }

    @Test
    void aReadQueuedPastHalfTheLeaseIsDescribedAgain_neverPostedOnItsOldDescription() {
        PeerFetcher f = fetcher(1, 1);
        List<BlockId> blocks = blocks(2);
        f.fetch(blocks, listener);
        f.onMessage(answer(channel.onlyRequest(), 0x1000, 4096));
        assertEquals(1, channel.chains.size(), "the second read waits for the first chain");

        clock.addAndGet(TIMEOUT / 2 + 1);
        f.checkTimeouts(clock.get());
        assertEquals(2, channel.sent.size(), "the waiting read is asked for again");
        Message.FetchRequest again = (Message.FetchRequest) channel.sent.get(1);
        assertEquals(List.of(blocks.get(1)), again.blocks());

        f.onChainCompleted(channel.chains.getFirst().id(), null);
        assertEquals(1, channel.chains.size(), "not posted on its stale description");
        f.onMessage(answer(again, 0x9000, 0));
        assertEquals(2, channel.chains.size());
        assertEquals(0x9000, channel.chains.get(1).remoteAddress(), "read where the new description says");
        f.onChainCompleted(channel.chains.get(1).id(), null);
        assertEquals(blocks, delivered.stream().map(FetchedBlock::id).toList());
        assertIdle(f);
    }

    // ------------------------------------------------------------------ failures

    @Test
    void aFailedBufferRegistrationFailsOnlyTheReadsWaitingForIt_andLeaksNothing() {
        PeerFetcher f = fetcher(16, 8);
        registrationFault = new IllegalStateException("ibv_reg_mr failed: errno 12 (ENOMEM)");
        f.fetch(blocks(2), listener);
        f.onMessage(answer(channel.onlyRequest(), 0x1000, 0));
        assertEquals(2, failures.size());
        assertTrue(failures.getFirst().getMessage().contains("no fetch buffer"), failures.getFirst().getMessage());
        assertTrue(!channel.retired, "the connection carries on");
        assertEquals(0, budget.bytesInFlight());
        assertEquals(0, buffers.outstanding());

        registrationFault = null; // room again: the next fetch goes through
        List<BlockId> next = List.of(BlockId.of(0, 9, 0));
        f.fetch(next, listener);
        f.onMessage(answer((Message.FetchRequest) channel.sent.get(1), 0x1000, 0));
        f.onChainCompleted(channel.chains.getFirst().id(), null);
        assertEquals(next, delivered.stream().map(FetchedBlock::id).toList());
        assertIdle(f);
    }

    @Test
    void aFailedReadRetiresTheConnectionBeforeAnyBufferIsReused_orAnyListenerTold() {
        PeerFetcher f = fetcher(16, 8);
        List<BlockId> blocks = blocks(2);
        f.fetch(blocks, listener);
        f.onMessage(answer(channel.onlyRequest(), 0x1000, 4096));
        f.onChainCompleted(channel.chains.getFirst().id(), new IOException("RDMA_READ failed with REM_ACCESS_ERR"));
        assertEquals(List.of("retired", "failed " + blocks.get(0), "failed " + blocks.get(1)), events);
        assertEquals(0, buffers.outstanding(), "every buffer back once the queue pairs are gone");
        assertTrue(f.isFailed());
        assertIdle(f);
    }

    @Test
    void aPostThatFailsFailsTheConnection_andGivesItsBuffersBack() {
        PeerFetcher f = fetcher(16, 8);
        channel.failPosts = new IllegalStateException("ibv_post_send failed: errno 12, at work request 0");
        f.fetch(blocks(2), listener);
        f.onMessage(answer(channel.onlyRequest(), 0x1000, 0));
        assertTrue(channel.retired);
        assertEquals(2, failures.size());
        assertEquals(0, buffers.outstanding());
        assertIdle(f);
    }

    /**
     * Reading an answer throws part-way (the first block queued, the second not: a bug, or input no
     * check caught): the request stays awaited, so when the router fails the connection (its owner's
     * {@code fail}) every block of it fails, once, naming what was thrown; none is lost.
     */
    @Test
    void anAnswerWhoseReadingThrowsPartWay_leavesEachOfItsBlocksToFailOnceWithTheConnection() {
        PeerFetcher f = fetcher(16, 8);
        List<BlockId> blocks = blocks(2);
        f.fetch(blocks, listener);
        Message.FetchRequest asked = channel.onlyRequest();
        buffersFault = new IndexOutOfBoundsException("Index 2 out of bounds for length 2");
        // The second block is larger than a buffer: making its pieces asks for the buffers, which throws.
        IndexOutOfBoundsException thrown = org.junit.jupiter.api.Assertions.assertThrows(IndexOutOfBoundsException.class,
                () -> f.onMessage(described(asked, 100, 200 << 10)));
        assertTrue(failures.isEmpty() && !channel.retired, "the fetcher itself failed nothing yet");

        f.fail(new IOException("handling a FetchResponse threw " + thrown, thrown)); // what the router has its owner do
        assertEquals(List.of("retired", "failed " + blocks.get(0), "failed " + blocks.get(1)), events, "each block once");
        assertTrue(failures.getFirst().getMessage().contains("IndexOutOfBoundsException: Index 2"), failures.getFirst().getMessage());
        assertEquals(0, buffers.outstanding());
        assertIdle(f);
    }

    /**
     * A listener throws an Error on the first block of a completed chain (which Outcomes lets through):
     * the blocks not yet handed over fail at once with the connection, their buffers back; the one handed
     * over stays its consumer's; the throw goes on to the router.
     */
    @Test
    void aChainWhoseDeliveryThrows_failsTheBlocksNotHandedOver_andLeavesTheHandedOnesToTheirConsumers() {
        PeerFetcher f = fetcher(16, 8);
        List<BlockId> blocks = blocks(3);
        List<FetchedBlock> taken = new ArrayList<>();
        BlockFetchListener throwing = new BlockFetchListener() {
            @Override
            public void onBlockFetched(FetchedBlock block) {
                taken.add(block);
                throw new StackOverflowError("a listener recursing without end");
            }

            @Override
            public void onBlockFetchFailure(BlockId block, Throwable cause) {
                listener.onBlockFetchFailure(block, cause);
            }
        };
        f.fetch(blocks, throwing);
        f.onMessage(answer(channel.onlyRequest(), 0x1000, 0));
        long chain = channel.chains.getFirst().id();
        org.junit.jupiter.api.Assertions.assertThrows(StackOverflowError.class, () -> f.onChainCompleted(chain, null));

        assertEquals(List.of(blocks.get(0)), taken.stream().map(FetchedBlock::id).toList());
        assertEquals(List.of("retired", "failed " + blocks.get(1), "failed " + blocks.get(2)), events);
        assertTrue(failures.getFirst().getMessage().contains("StackOverflowError"), failures.getFirst().getMessage());
        assertEquals(1, buffers.outstanding(), "only the handed-over block's buffer is out, its consumer's");
        taken.getFirst().release();
        assertEquals(0, buffers.outstanding());
        assertIdle(f);
    }

    @Test
    void aResponseToARequestNeverMadeFailsTheConnection() {
        PeerFetcher f = fetcher(16, 8);
        f.fetch(blocks(1), listener);
        f.onMessage(new Message.FetchResponse(12345, List.of()));
        assertTrue(channel.retired);
        assertTrue(failures.getFirst().getMessage().contains("not awaited"), failures.getFirst().getMessage());
        assertIdle(f);
    }

    // ------------------------------------------------------------------ held answers (protocol version 5)

    @Test
    void aHeldAnswersOutputsAreReleasedOnceTheirReadsComplete_eachOncePerAnswer_emptyBlocksHoldingNothing() {
        PeerFetcher f = fetcher(16, 8);
        List<BlockId> blocks = List.of(BlockId.of(0, 1, 0), BlockId.of(0, 1, 1), BlockId.of(0, 2, 0), BlockId.of(0, 3, 0));
        f.fetch(blocks, listener);
        Message.FetchRequest asked = channel.onlyRequest();
        f.onMessage(held(described(asked, 100, 100, 100, 0))); // map 3's block is empty: the peer held nothing for it
        assertEquals(1, channel.sent.size(), "nothing released while the reads are posted");
        assertArrayEquals(new int[] {2, 0}, f.heldOutputs(), "maps 1 and 2 held, nothing owed");

        completeChains(f);
        assertEquals(4, delivered.size(), "every block delivered");
        assertEquals(List.of(new Message.Release(List.of(new Message.Released(0, 1, 1), new Message.Released(0, 2, 1)))),
                releases(), "maps 1 and 2 released once each, for the one answer that described them");
        assertArrayEquals(new int[] {0, 0}, f.heldOutputs());
        assertIdle(f);
    }

    @Test
    void aHeldAnswerOfTheFirstBlocksOnly_hasTheOthersAskedForAgain_andReleasesWhatWasRead() {
        PeerFetcher f = fetcher(16, 8);
        List<BlockId> blocks = blocks(3);
        f.fetch(blocks, listener);
        Message.FetchRequest asked = channel.onlyRequest();
        Message.FetchResponse all = described(asked, 100, 100, 100);
        f.onMessage(new Message.FetchResponse(asked.requestId(), all.blocks().subList(0, 1), List.of(), true));
        Message.FetchRequest again = (Message.FetchRequest) channel.sent.get(1);
        assertEquals(blocks.subList(1, 3), again.blocks(), "the blocks not described asked for again");
        assertTrue(failures.isEmpty(), "nothing failed: " + failures);

        completeChains(f);
        assertEquals(List.of(new Message.Release(List.of(new Message.Released(0, 1, 1)))), releases());
        f.onMessage(held(described(again, 100, 100)));
        completeChains(f);
        assertEquals(3, delivered.size());
        assertEquals(2, releases().size(), "the second answer's outputs released in a message of their own");
        assertIdle(f);
    }

    @Test
    void aHeldLargeBlock_keepsItsOutputUntilItsLastPieceLands_evenAfterItsConsumerLetItGo() {
        PeerFetcher f = fetchingOneBigBlock(BlockId.of(0, 1, 0), true);
        f.onChainCompleted(channel.chains.get(0).id(), null);
        delivered.getFirst().release(); // the consumer is done; the second piece is still being read from the peer's region
        delivered.clear();
        assertEquals(List.of(), releases(), "not released while a piece is posted");
        f.onChainCompleted(channel.chains.get(1).id(), null);
        assertEquals(List.of(new Message.Release(List.of(new Message.Released(0, 1, 1)))), releases());
        assertIdle(f);
    }

    @Test
    void aFetcherWhoseReadFails_releasesNothing_thePeerDropsWhatTheConnectionHeld() {
        PeerFetcher f = fetcher(16, 8);
        f.fetch(blocks(2), listener);
        f.onMessage(held(answer(channel.onlyRequest(), 0x1000, 0)));
        f.onChainCompleted(channel.chains.getFirst().id(), new IOException("remote access error"));
        assertTrue(channel.retired);
        assertEquals(List.of(), releases());
        assertArrayEquals(new int[] {0, 0}, f.heldOutputs());
    }

    /**
     * A fetcher posting one piece per chain (one SGE per request, one request per chain), asked for
     * {@code big} and answered: a block of 200 KiB, read in pieces, in a {@code held} answer or not.
     */
    private PeerFetcher fetchingOneBigBlock(BlockId big, boolean held) {
        PeerFetcher f = new PeerFetcher(channel, context, new PeerFetcher.Limits(1, 1, 1 << 20, 8 << 20, 8, 64, TIMEOUT, TIMEOUT, false));
        f.fetch(List.of(big), listener);
        Message.FetchRequest asked = channel.onlyRequest();
        f.onMessage(new Message.FetchResponse(asked.requestId(), List.of(new BlockDescriptor(big.shuffleId(), big.mapId(),
                big.startPartition(), big.endPartition(), 0x100000, 200 << 10, RKEY)), List.of(), held));
        return f;
    }

    private static Message.FetchResponse held(Message.FetchResponse r) {
        return new Message.FetchResponse(r.requestId(), r.blocks(), r.layouts(), true);
    }

    private List<Message.Release> releases() {
        return channel.sent.stream().filter(m -> m instanceof Message.Release).map(m -> (Message.Release) m).toList();
    }

    // ------------------------------------------------------------------ helpers

    private PeerFetcher fetcher(int chainLength, int maxChainsInFlight) {
        return new PeerFetcher(channel, context, new PeerFetcher.Limits(chainLength, 16, 1 << 20, 8 << 20,
                maxChainsInFlight, 64, TIMEOUT, TIMEOUT, false));
    }

    private static List<BlockId> blocks(int n) {
        List<BlockId> blocks = new ArrayList<>();
        for (int m = 1; m <= n; m++) {
            blocks.add(BlockId.of(0, m, 0));
        }
        return blocks;
    }

    /** The peer's answer: each block 100 bytes, the first at {@code address}, each {@code gap} bytes after the last one's end. */
    private static Message.FetchResponse answer(Message.FetchRequest r, long address, long gap) {
        List<BlockDescriptor> ds = new ArrayList<>();
        long at = address;
        for (BlockId b : r.blocks()) {
            ds.add(new BlockDescriptor(b.shuffleId(), b.mapId(), b.startPartition(), b.endPartition(), at, 100, RKEY));
            at += 100 + gap;
        }
        return new Message.FetchResponse(r.requestId(), ds);
    }

    /** The peer's answer: block {@code i} claims {@code lengths[i]} bytes, each a MiB after the last's start. */
    private static Message.FetchResponse described(Message.FetchRequest r, long... lengths) {
        List<BlockDescriptor> ds = new ArrayList<>();
        for (int i = 0; i < lengths.length; i++) {
            BlockId b = r.blocks().get(i);
            ds.add(new BlockDescriptor(b.shuffleId(), b.mapId(), b.startPartition(), b.endPartition(),
                    PEER_BASE + ((long) i << 20), lengths[i], RKEY));
        }
        return new Message.FetchResponse(r.requestId(), ds);
    }

    /** Nothing owed, nothing in flight, nothing of the budget held. */
    private void assertIdle(PeerFetcher f) {
        assertEquals(0, f.awaitingRequests(), "requests awaiting an answer");
        assertEquals(0, f.queuedReads(), "reads queued");
        assertEquals(0, f.chainsInFlight(), "chains in flight");
        assertEquals(0, budget.bytesInFlight(), "budget bytes");
        assertEquals(0, budget.chainsInFlight(), "budget chains");
    }

    private MemoryRegion register(long bytes) {
        RuntimeException fault = registrationFault;
        if (fault != null) {
            throw fault;
        }
        MemorySegment segment = arena.allocate(bytes, 4096);
        regionsOpen.incrementAndGet();
        return new MemoryRegion() {
            @Override
            public MemorySegment segment() {
                return segment;
            }

            @Override
            public int lkey() {
                return 1;
            }

            @Override
            public int rkey() {
                return 0;
            }

            @Override
            public int access() {
                return Access.LOCAL_WRITE;
            }

            @Override
            public void close() {
                regionsOpen.decrementAndGet();
            }
        };
    }

    /** A chain as posted: its id, requests and scatter entries, and where its first request reads. */
    private record Posted(long id, int requests, int sges, long remoteAddress) {
    }

    /** The peer as the fetcher sees it: records every send, post and retire, in {@link #events} order too. */
    private final class RecordingChannel implements PeerChannel {
        final List<Message> sent = new ArrayList<>();
        final List<Posted> chains = new ArrayList<>();
        RuntimeException failPosts;
        boolean retired;
        /** Where reads are served from, as a peer's region at {@link #PEER_BASE} would (null: posts are only recorded). */
        MemorySegment peerMemory;
        /** Every read request posted: remote address, then each SGE's address and length. */
        final List<long[]> requests = new ArrayList<>();

        @Override
        public String peer() {
            return "peer:7337";
        }

        @Override
        public void send(Message message) {
            sent.add(message);
        }

        @Override
        public void postReads(long chainId, ReadPlan plan) {
            if (failPosts != null) {
                throw failPosts;
            }
            int sges = 0;
            for (int i = 0; i < plan.requests(); i++) {
                sges += plan.sgeCount(i);
                long[] request = new long[1 + 2 * plan.sgeCount(i)];
                request[0] = plan.remoteAddress(i);
                long from = plan.remoteAddress(i) - PEER_BASE;
                for (int j = 0; j < plan.sgeCount(i); j++) {
                    request[1 + 2 * j] = plan.sgeAddress(i, j);
                    request[2 + 2 * j] = plan.sgeLength(i, j);
                    if (peerMemory != null) { // the read itself, done at once: completed when the test says
                        MemorySegment.copy(peerMemory, from, MemorySegment.ofAddress(plan.sgeAddress(i, j))
                                .reinterpret(plan.sgeLength(i, j)), 0, plan.sgeLength(i, j));
                        from += plan.sgeLength(i, j);
                    }
                }
                requests.add(request);
            }
            chains.add(new Posted(chainId, plan.requests(), sges, plan.remoteAddress(0)));
        }

        @Override
        public void retire() {
            if (!retired) {
                events.add("retired");
            }
            retired = true;
        }

        @Override
        public int queuePairs() {
            return 1;
        }

        Message.FetchRequest onlyRequest() {
            assertEquals(1, sent.size(), "requests sent: " + sent);
            return (Message.FetchRequest) sent.getFirst();
        }
    }
}
