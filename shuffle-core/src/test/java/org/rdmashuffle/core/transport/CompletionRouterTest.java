package org.rdmashuffle.core.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.WorkCompletionOpcode;
import org.rdmashuffle.verbs.WorkCompletions;

/** Each completion of a batch reaches its kind's handler, whatever another one's handler does. */
class CompletionRouterTest {

    @Test
    void oneFailingCompletionNeverDropsItsBatch() {
        List<String> seen = new ArrayList<>();
        CompletionRouter d = new CompletionRouter(
                (wcs, i, v) -> seen.add("receive " + v),
                (wcs, i, v) -> {
                    seen.add("send " + v);
                    throw new IllegalStateException("a bug in the send path");
                },
                (wcs, i, v) -> seen.add("read " + v));
        try (WorkCompletions batch = WorkCompletions.allocate(4)) {
            batch.set(0, WorkRequestIds.of(WorkRequestIds.RECEIVE, 3), 0, WorkCompletionOpcode.RECV.code(), 0, 10, 0, 1, 0);
            batch.set(1, WorkRequestIds.of(WorkRequestIds.SEND, 7), 0, WorkCompletionOpcode.SEND.code(), 0, 0, 0, 1, 0);
            batch.set(2, WorkRequestIds.of(WorkRequestIds.READ, 9), 0, WorkCompletionOpcode.RDMA_READ.code(), 0, 0, 0, 1, 0);
            batch.set(3, WorkRequestIds.of(WorkRequestIds.RECEIVE, 4), 0, WorkCompletionOpcode.RECV.code(), 0, 10, 0, 1, 0);
            d.handle(batch, 4);
        }
        assertEquals(List.of("receive 3", "send 7", "read 9", "receive 4"), seen);
    }

    /** A handler that throws an Error (a stack overflow on a crafted message, say) costs its completion, not the batch. */
    @Test
    void anErrorInOneHandlerNeverDropsItsBatch() {
        List<String> seen = new ArrayList<>();
        CompletionRouter d = new CompletionRouter(
                (wcs, i, v) -> {
                    seen.add("receive " + v);
                    throw new StackOverflowError("a message deeper than the stack");
                },
                (wcs, i, v) -> seen.add("send " + v),
                (wcs, i, v) -> seen.add("read " + v));
        try (WorkCompletions batch = WorkCompletions.allocate(3)) {
            batch.set(0, WorkRequestIds.of(WorkRequestIds.RECEIVE, 3), 0, WorkCompletionOpcode.RECV.code(), 0, 10, 0, 1, 0);
            batch.set(1, WorkRequestIds.of(WorkRequestIds.SEND, 7), 0, WorkCompletionOpcode.SEND.code(), 0, 0, 0, 1, 0);
            batch.set(2, WorkRequestIds.of(WorkRequestIds.READ, 9), 0, WorkCompletionOpcode.RDMA_READ.code(), 0, 0, 0, 1, 0);
            d.handle(batch, 3);
        }
        assertEquals(List.of("receive 3", "send 7", "read 9"), seen);
    }
}
