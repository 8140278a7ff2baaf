package org.rdmashuffle.verbs.software;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.AsyncEvent;
import org.rdmashuffle.verbs.WorkCompletions;

/**
 * The software completion queue's ring starts small and grows as completions pile up: in order across
 * its growth and its wrap-around, and overrunning (CQ_ERR) only at the capacity asked for.
 */
class SoftCompletionQueueTest {

    @Test
    void aQueueOfLargeCapacity_holdsFewSlotsUntilCompletionsPileUp_andKeepsTheirOrderAcrossGrowthAndWrapAround() {
        try (SoftwareProvider provider = new SoftwareProvider(SoftwareProvider.Config.loopback());
             SoftContext context = (SoftContext) provider.devices().getFirst().open();
             WorkCompletions out = WorkCompletions.allocate(1000)) {
            SoftCompletionQueue cq = (SoftCompletionQueue) context.createCompletionQueue(1 << 15, null, 0);
            assertEquals(SoftCompletionQueue.INITIAL_SLOTS, cq.slots(), "a new queue's ring");
            long next = 0;
            long expected = 0;
            // move the head off zero so that the ring wraps before it first grows
            for (int i = 0; i < 40; i++) {
                cq.push(next++, 0, 0, 7, 0, 3, 0, false);
            }
            expected = drain(cq, out, expected, 40);
            for (int i = 0; i < 5000; i++) {
                cq.push(next++, 0, 0, (int) (next % 1000), 0, 3, 0, false);
            }
            assertEquals(8192, cq.slots(), "5,000 completions held: the ring doubled to the first power of two above");
            expected = drain(cq, out, expected, 5000);
            assertEquals(next, expected);
            assertEquals(32768, cq.capacity());
        }
    }

    @Test
    void aFullQueue_overrunsAtItsCapacity_notAtItsRingsFirstLength() {
        try (SoftwareProvider provider = new SoftwareProvider(SoftwareProvider.Config.loopback());
             SoftContext context = (SoftContext) provider.devices().getFirst().open();
             WorkCompletions out = WorkCompletions.allocate(1000)) {
            List<AsyncEvent.Type> events = new ArrayList<>();
            SoftCompletionQueue cq = (SoftCompletionQueue) context.createCompletionQueue(300, null, 0);
            for (int i = 0; i < 300; i++) {
                cq.push(i, 0, 0, 1, 0, 3, 0, false);
            }
            assertEquals(300, cq.slots(), "grown to the capacity, no further");
            cq.push(300, 0, 0, 1, 0, 3, 0, false); // one too many: lost, as on a device
            AsyncEvent event = context.awaitAsyncEvent(java.time.Duration.ofSeconds(5));
            assertTrue(event != null && event.type() == AsyncEvent.Type.CQ_ERR, "the overrun's event: " + event);
            assertEquals(300, drain(cq, out, 0, 300));
            assertEquals(0, cq.poll(out), "the 301st completion was lost");
        }
    }

    /** Polls {@code count} completions, checking their wr_ids run on from {@code expected}; returns the next expected. */
    private static long drain(SoftCompletionQueue cq, WorkCompletions out, long expected, int count) {
        int got = 0;
        while (got < count) {
            int n = cq.poll(out);
            assertTrue(n > 0, "completions missing after " + got + " of " + count);
            for (int k = 0; k < n; k++) {
                assertEquals(expected++, out.wrId(k), "completion " + (got + k) + " out of order");
            }
            got += n;
        }
        return expected;
    }
}
