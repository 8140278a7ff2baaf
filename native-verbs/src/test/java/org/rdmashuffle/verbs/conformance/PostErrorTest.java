package org.rdmashuffle.verbs.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.PostException;
import org.rdmashuffle.verbs.QueuePairState;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.WorkCompletionStatus;

/** Refused posts name the bad work request; posts on a QP in ERR never succeed. */
class PostErrorTest {

    @Test
    void aBadRequestInTheMiddleOfAChainIsNamedAndThoseBeforeItComplete() {
        try (Loopback l = Loopback.open(16, 1, 0);
             MemoryRegion remote = l.pd.allocateAndRegister(8192, Access.REMOTE_READ | Access.LOCAL_WRITE);
             MemoryRegion local = l.pd.allocateAndRegister(8192, Access.LOCAL_WRITE)) {
            int maxSge = l.a.capabilities().maxSendSge();
            try (SendWorkRequests chain = SendWorkRequests.allocate(5, maxSge + 1)) {
                for (int i = 0; i < 5; i++) {
                    chain.get(i).rdmaRead(900 + i, SendFlags.SIGNALED, local, i * 1024L, 1024, remote.address() + i * 1024L,
                            remote.rkey());
                }
                // More SGEs than the QP was granted: the provider must refuse request #2.
                for (int s = 1; s <= maxSge; s++) {
                    chain.get(2).sge(s, local, 6000 + s, 1);
                }
                chain.get(2).sgeCount(maxSge + 1);
                PostException e = assertThrows(PostException.class, () -> l.a.postSend(chain, 5));
                assertEquals(2, e.failedIndex(), e.getMessage());
                assertEquals(902, e.failedWrId());
                assertEquals(2, e.postedBefore());
                assertTrue(e.getMessage().contains("ibv_post_send"), e.getMessage());
                assertTrue(e.getMessage().contains("work request #2 (wr_id 902)"), e.getMessage());
                assertNotEquals(0, e.errno());
                List<VerbsTestSupport.Completion> done = VerbsTestSupport.awaitCompletions(l.cqA, 2);
                assertEquals(List.of(900L, 901L), done.stream().map(VerbsTestSupport.Completion::wrId).toList());
                done.forEach(c -> assertEquals(WorkCompletionStatus.SUCCESS, c.status()));
            }
        }
    }

    @Test
    void postOnAQueuePairInErrorStateNeverSucceeds() {
        try (Loopback l = Loopback.open();
             MemoryRegion remote = l.pd.allocateAndRegister(4096, Access.REMOTE_READ | Access.LOCAL_WRITE);
             MemoryRegion local = l.pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
             SendWorkRequests chain = SendWorkRequests.allocate(1, 1)) {
            l.a.modifyToError();
            assertEquals(QueuePairState.ERR, l.a.query().state());
            chain.get(0).rdmaRead(55, SendFlags.SIGNALED, local, 0, 64, remote.address(), remote.rkey());
            try {
                l.a.postSend(chain, 1);
            } catch (PostException refused) {
                assertEquals(0, refused.failedIndex(), refused.getMessage());
                return; // providers may refuse the post outright...
            }
            // ...or accept it and flush it, as the IB spec describes.
            VerbsTestSupport.Completion c = VerbsTestSupport.awaitCompletions(l.cqA, 1).getFirst();
            assertEquals(55, c.wrId());
            assertEquals(WorkCompletionStatus.WR_FLUSH_ERR, c.status(), c::toString);
        }
    }
}
