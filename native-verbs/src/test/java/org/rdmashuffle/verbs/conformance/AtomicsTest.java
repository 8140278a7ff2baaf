package org.rdmashuffle.verbs.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.ValueLayout;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletionOpcode;
import org.rdmashuffle.verbs.WorkCompletionStatus;

/** ATOMIC_CMP_AND_SWP and ATOMIC_FETCH_AND_ADD on 8 remote bytes; the old value lands locally. */
class AtomicsTest {

    @Test
    void compareAndSwapThenFetchAndAdd() {
        try (Loopback l = Loopback.open()) {
            Assumptions.assumeTrue(l.context.queryDevice().supportsAtomics(),
                    () -> l.target.device().name() + " has no atomics (atomic_cap " + l.context.queryDevice().atomicCapability() + ")");
            try (MemoryRegion counter = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE | Access.REMOTE_ATOMIC);
                 MemoryRegion old = l.pd.allocateAndRegister(64, Access.LOCAL_WRITE);
                 SendWorkRequests chain = SendWorkRequests.allocate(3, 1)) {
                counter.segment().set(ValueLayout.JAVA_LONG, 8, 100L);
                long addr = counter.address() + 8;
                chain.get(0).reset().wrId(1).compareAndSwap(addr, counter.rkey(), 100L, 500L)
                        .sge(0, old, 0, 8).sgeCount(1).flags(SendFlags.SIGNALED);
                chain.get(1).reset().wrId(2).compareAndSwap(addr, counter.rkey(), 100L, 999L) // fails: value is 500
                        .sge(0, old, 8, 8).sgeCount(1).flags(SendFlags.SIGNALED);
                chain.get(2).reset().wrId(3).fetchAndAdd(addr, counter.rkey(), 42L)
                        .sge(0, old, 16, 8).sgeCount(1).flags(SendFlags.SIGNALED);
                l.a.postSend(chain, 3);
                var done = VerbsTestSupport.awaitCompletions(l.cqA, 3);
                done.forEach(c -> assertEquals(WorkCompletionStatus.SUCCESS, c.status(), c::toString));
                assertEquals(WorkCompletionOpcode.COMP_SWAP, done.get(0).opcode());
                assertEquals(WorkCompletionOpcode.FETCH_ADD, done.get(2).opcode());
                assertEquals(100L, old.segment().get(ValueLayout.JAVA_LONG, 0), "CAS returns the old value");
                assertEquals(500L, old.segment().get(ValueLayout.JAVA_LONG, 8), "failed CAS returns the current value");
                assertEquals(500L, old.segment().get(ValueLayout.JAVA_LONG, 16), "FAA returns the value before the add");
                assertEquals(542L, counter.segment().get(ValueLayout.JAVA_LONG, 8));
            }
        }
    }
}
