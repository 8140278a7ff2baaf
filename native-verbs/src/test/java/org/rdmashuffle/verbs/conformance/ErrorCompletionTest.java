package org.rdmashuffle.verbs.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.QueuePairState;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletionException;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkCompletions;

/**
 * Remote accesses the target's memory region does not allow fail at the requester with a remote
 * access error and move its QP to ERR, and the target's memory outside the region is never read.
 */
class ErrorCompletionTest {

    @Test
    void wrongRkeyGivesRemoteAccessError() {
        try (Loopback l = Loopback.openFailFast();
             MemoryRegion remote = l.pd.allocateAndRegister(4096, Access.REMOTE_READ | Access.LOCAL_WRITE);
             MemoryRegion local = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             SendWorkRequests chain = SendWorkRequests.allocate(1, 1)) {
            chain.get(0).rdmaRead(31, SendFlags.SIGNALED, local, 0, 64, remote.address(), remote.rkey() ^ 0x5500);
            l.a.postSend(chain, 1);
            VerbsTestSupport.Completion c = VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst();
            assertEquals(WorkCompletionStatus.REM_ACCESS_ERR, c.status(), c::toString);
            assertEquals(31, c.wrId());
            assertEquals(QueuePairState.ERR, l.a.query().state());
        }
    }

    /**
     * A key names one registration. After it is deregistered, a read with it is refused -- also once
     * another region has taken its place, perhaps at the same address (a reducer's stale descriptor).
     */
    @Test
    void aDeregisteredRkeyIsRefusedAfterAnotherRegionTakesItsPlace() {
        try (Loopback l = Loopback.openFailFast();
             MemoryRegion local = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             SendWorkRequests chain = SendWorkRequests.allocate(1, 1)) {
            MemoryRegion gone = l.pd.allocateAndRegister(4096, Access.REMOTE_READ | Access.LOCAL_WRITE);
            int staleKey = gone.rkey();
            gone.close();
            try (MemoryRegion next = l.pd.allocateAndRegister(4096, Access.REMOTE_READ | Access.LOCAL_WRITE)) {
                org.junit.jupiter.api.Assertions.assertNotEquals(staleKey, next.rkey(), "a new registration, a new key");
                chain.get(0).rdmaRead(33, SendFlags.SIGNALED, local, 0, 64, next.address(), staleKey);
                l.a.postSend(chain, 1);
                VerbsTestSupport.Completion c = VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst();
                assertEquals(WorkCompletionStatus.REM_ACCESS_ERR, c.status(), c::toString);
                assertEquals(QueuePairState.ERR, l.a.query().state());
            }
        }
    }

    @Test
    void readPastTheEndOfARegionIsRefused() {
        try (Loopback l = Loopback.openFailFast();
             MemoryRegion remote = l.pd.allocateAndRegister(4096, Access.REMOTE_READ | Access.LOCAL_WRITE);
             MemoryRegion local = l.pd.allocateAndRegister(8192, Access.LOCAL_WRITE);
             SendWorkRequests chain = SendWorkRequests.allocate(1, 1)) {
            chain.get(0).rdmaRead(32, SendFlags.SIGNALED, local, 0, 4097, remote.address(), remote.rkey());
            l.a.postSend(chain, 1);
            VerbsTestSupport.Completion c = VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst();
            assertEquals(WorkCompletionStatus.REM_ACCESS_ERR, c.status(), c::toString);
            assertEquals(QueuePairState.ERR, l.a.query().state());
        }
    }

    @Test
    void writeToAReadOnlyRegionIsRefused() {
        try (Loopback l = Loopback.openFailFast();
             MemoryRegion remote = l.pd.allocateAndRegister(4096, Access.REMOTE_READ | Access.LOCAL_WRITE);
             MemoryRegion local = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             SendWorkRequests chain = SendWorkRequests.allocate(1, 1)) {
            local.segment().fill((byte) 9);
            chain.get(0).reset().wrId(33).opcode(org.rdmashuffle.verbs.WorkRequestOpcode.RDMA_WRITE)
                    .flags(SendFlags.SIGNALED).remote(remote.address(), remote.rkey()).sge(0, local, 0, 64).sgeCount(1);
            l.a.postSend(chain, 1);
            VerbsTestSupport.Completion c = VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst();
            assertEquals(WorkCompletionStatus.REM_ACCESS_ERR, c.status(), c::toString);
            assertEquals(0, remote.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0), "target untouched");
        }
    }

    /**
     * What librpma relies on: a request posted unsignaled still completes when it fails, with its own
     * wr_id and status, while its unsignaled predecessors that succeeded complete silently.
     */
    @Test
    void anUnsignaledRequestThatFailsStillCompletesWithItsWrId() {
        try (Loopback l = Loopback.openFailFast();
             MemoryRegion remote = l.pd.allocateAndRegister(4096, Access.REMOTE_READ | Access.LOCAL_WRITE);
             MemoryRegion local = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             SendWorkRequests chain = SendWorkRequests.allocate(3, 1)) {
            chain.get(0).rdmaRead(41, 0, local, 0, 64, remote.address(), remote.rkey());
            chain.get(1).rdmaRead(42, 0, local, 64, 64, remote.address() + 64, remote.rkey());
            chain.get(2).rdmaRead(43, 0, local, 128, 64, remote.address(), remote.rkey() ^ 0x5500);
            l.a.postSend(chain, 3);
            VerbsTestSupport.Completion c = VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst();
            assertEquals(43, c.wrId(), c::toString);
            assertEquals(WorkCompletionStatus.REM_ACCESS_ERR, c.status(), c::toString);
            VerbsTestSupport.assertNoMoreCompletions(l.cqA, java.time.Duration.ofMillis(300));
        }
    }

    @Test
    void errorCompletionDescribesItself() {
        try (Loopback l = Loopback.openFailFast();
             MemoryRegion local = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             SendWorkRequests chain = SendWorkRequests.allocate(1, 1);
             WorkCompletions wc = WorkCompletions.allocate(1)) {
            chain.get(0).rdmaRead(34, SendFlags.SIGNALED, local, 0, 64, local.address(), 0x12345);
            l.a.postSend(chain, 1);
            int n = 0;
            long deadline = System.nanoTime() + VerbsTestSupport.TIMEOUT.toNanos();
            while (n == 0 && System.nanoTime() < deadline) {
                n = l.cqA.poll(wc);
            }
            assertEquals(1, n);
            WorkCompletionException e = wc.failure(0);
            assertTrue(e.getMessage().contains("wr_id 34"), e.getMessage());
            assertTrue(e.getMessage().contains("REM_ACCESS_ERR (remote access error)"), e.getMessage());
            assertTrue(e.getMessage().contains("vendor error 0x"), e.getMessage());
        }
    }
}
