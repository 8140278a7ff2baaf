package org.rdmashuffle.verbs.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletionOpcode;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkRequestOpcode;

/**
 * The engine's data path: a chain of RDMA_READs, only the last signaled, each scattering one
 * remote block into two local buffers (multi-SGE). One completion means the whole chain landed.
 */
class RdmaReadChainTest {
    private static final int BLOCK = 3000;

    @ParameterizedTest(name = "chain of {0}")
    @ValueSource(ints = {1, 2, 16, 64})
    void chainWithOnlyTheLastSignaledScattersEveryBlock(int length) {
        try (Loopback l = Loopback.open(128, 2, 0);
             MemoryRegion remote = l.pd.allocateAndRegister((long) length * BLOCK, Access.REMOTE_READ | Access.LOCAL_WRITE);
             MemoryRegion heads = l.pd.allocateAndRegister((long) length * 1000, Access.LOCAL_WRITE);
             MemoryRegion tails = l.pd.allocateAndRegister((long) length * (BLOCK - 1000), Access.LOCAL_WRITE);
             SendWorkRequests chain = SendWorkRequests.allocate(length, 2)) {
            for (long i = 0; i < remote.length(); i++) {
                remote.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 13 + length));
            }
            for (int i = 0; i < length; i++) {
                chain.get(i).reset().wrId(5000 + i).opcode(WorkRequestOpcode.RDMA_READ)
                        .flags(i == length - 1 ? SendFlags.SIGNALED : 0)
                        .remote(remote.address() + (long) i * BLOCK, remote.rkey())
                        .sge(0, heads, (long) i * 1000, 1000)
                        .sge(1, tails, (long) i * (BLOCK - 1000), BLOCK - 1000)
                        .sgeCount(2);
            }
            l.a.postSend(chain, length);

            List<VerbsTestSupport.Completion> done = VerbsTestSupport.awaitCompletions(l.cqA, 1);
            assertEquals(WorkCompletionStatus.SUCCESS, done.getFirst().status(), done::toString);
            assertEquals(5000 + length - 1, done.getFirst().wrId());
            assertEquals(WorkCompletionOpcode.RDMA_READ, done.getFirst().opcode());
            VerbsTestSupport.assertNoMoreCompletions(l.cqA, Duration.ofMillis(100));

            for (int i = 0; i < length; i++) {
                long r = (long) i * BLOCK;
                assertEquals(-1, remote.segment().asSlice(r, 1000).mismatch(heads.segment().asSlice((long) i * 1000, 1000)),
                        "head of block " + i);
                assertEquals(-1, remote.segment().asSlice(r + 1000, BLOCK - 1000)
                        .mismatch(tails.segment().asSlice((long) i * (BLOCK - 1000), BLOCK - 1000)), "tail of block " + i);
            }
        }
    }

    /**
     * A provider may reuse what it keeps per posted request. A read scattering into two buffers, then
     * a read into one: the second lands in its own buffer and nowhere else, small (copied through the
     * provider's own memory) or large (read straight into the registered memory).
     */
    @ParameterizedTest(name = "{0} bytes")
    @ValueSource(ints = {3000, 200_000})
    void aReadAfterAScatteringReadLandsOnlyInItsOwnBuffer(int bytes) {
        try (Loopback l = Loopback.open(4, 2, 0);
             MemoryRegion remote = l.pd.allocateAndRegister(2L * bytes, Access.REMOTE_READ | Access.LOCAL_WRITE);
             MemoryRegion heads = l.pd.allocateAndRegister(bytes, Access.LOCAL_WRITE);
             MemoryRegion tails = l.pd.allocateAndRegister(bytes, Access.LOCAL_WRITE);
             MemoryRegion single = l.pd.allocateAndRegister(bytes, Access.LOCAL_WRITE);
             SendWorkRequests chain = SendWorkRequests.allocate(1, 2)) {
            for (long i = 0; i < remote.length(); i++) {
                remote.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 1));
            }
            int half = bytes / 2;
            chain.get(0).reset().wrId(1).opcode(WorkRequestOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                    .remote(remote.address(), remote.rkey())
                    .sge(0, heads, 0, half).sge(1, tails, 0, bytes - half).sgeCount(2);
            l.a.postSend(chain, 1);
            assertEquals(WorkCompletionStatus.SUCCESS, VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst().status());
            heads.segment().fill((byte) 0x55);
            tails.segment().fill((byte) 0x55);

            chain.get(0).rdmaRead(2, SendFlags.SIGNALED, single, 0, bytes, remote.address() + bytes, remote.rkey());
            l.a.postSend(chain, 1);
            assertEquals(WorkCompletionStatus.SUCCESS, VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst().status());
            assertEquals(-1, remote.segment().asSlice(bytes, bytes).mismatch(single.segment()), "the second read's bytes");
            for (MemoryRegion earlier : List.of(heads, tails)) {
                for (long i = 0; i < bytes; i++) {
                    if (earlier.segment().get(ValueLayout.JAVA_BYTE, i) != 0x55) {
                        throw new AssertionError("the second read wrote into the first read's buffer at " + i);
                    }
                }
            }
        }
    }

    @ParameterizedTest(name = "reused {0} times")
    @ValueSource(ints = {3})
    void aChainIsReusedAcrossPosts(int posts) {
        try (Loopback l = Loopback.open();
             MemoryRegion remote = l.pd.allocateAndRegister(4096, Access.REMOTE_READ | Access.LOCAL_WRITE);
             MemoryRegion local = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             SendWorkRequests chain = SendWorkRequests.allocate(4, 1)) {
            for (int p = 0; p < posts; p++) {
                remote.segment().fill((byte) (p + 1));
                int n = 1 + p; // post a shorter prefix than the capacity, then a longer one
                for (int i = 0; i < n; i++) {
                    chain.get(i).rdmaRead(p * 10L + i, i == n - 1 ? SendFlags.SIGNALED : 0, local, i * 1024L, 1024,
                            remote.address() + i * 1024L, remote.rkey());
                }
                l.a.postSend(chain, n);
                assertEquals(p * 10L + n - 1, VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst().wrId());
                assertEquals((byte) (p + 1), local.segment().get(ValueLayout.JAVA_BYTE, (n - 1) * 1024L));
            }
        }
    }
}
