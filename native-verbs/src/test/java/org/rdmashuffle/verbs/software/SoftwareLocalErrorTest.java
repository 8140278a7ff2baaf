package org.rdmashuffle.verbs.software;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.QueuePairState;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.conformance.VerbsTestSupport;
import org.rdmashuffle.verbs.conformance.VerbsTestSupport.Completion;

/** A request that fails on the requester's side completes with the local error, in order with the others. */
class SoftwareLocalErrorTest {

    @Test
    void aReadIntoMemoryWithoutLocalWrite_completesWithLocalProtectionError_andFlushesWhatFollows() {
        try (SoftwarePair pair = new SoftwarePair().connect(SoftwarePair.OPTIONS);
             MemoryRegion readOnly = pair.requesterPd.allocateAndRegister(4096, Access.REMOTE_READ);
             MemoryRegion writable = pair.requesterPd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             MemoryRegion source = pair.responderPd.allocateAndRegister(4096, Access.REMOTE_READ);
             SendWorkRequests chain = SendWorkRequests.allocate(2, 1)) {
            chain.get(0).rdmaRead(1, SendFlags.SIGNALED, readOnly, 0, 64, source.address(), source.rkey());
            chain.get(1).rdmaRead(2, SendFlags.SIGNALED, writable, 0, 64, source.address(), source.rkey());
            pair.requester.postSend(chain, 2);
            List<Completion> done = VerbsTestSupport.awaitCompletions(pair.requesterCq, 2);
            assertEquals(WorkCompletionStatus.LOC_PROT_ERR, done.get(0).status(), done.toString());
            assertEquals(WorkCompletionStatus.WR_FLUSH_ERR, done.get(1).status(), done.toString());
            assertEquals(QueuePairState.ERR, pair.requester.query().state());
        }
    }
}
